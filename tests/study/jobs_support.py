"""Waiting for background jobs (``study.jobs``) in tests: they are real processes."""

from __future__ import annotations

import time

from storage.settings import Settings
from storage.workspace import open_workspace_session
from study.jobs import JobRecord, list_jobs


def wait_for_jobs(settings: Settings, *, timeout: float = 300.0) -> list[JobRecord]:
    """Wait until no job of the workspace runs; return its jobs, newest first."""
    deadline = time.monotonic() + timeout
    while True:
        with open_workspace_session(settings) as session:
            jobs = list_jobs(session=session)
        if not any(j.running for j in jobs):
            return jobs
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs still running after {timeout:.0f} s: {jobs}")
        time.sleep(0.5)


def wait_for_progress(settings: Settings, job_id: int, *, timeout: float = 180.0) -> JobRecord:
    """Wait until job ``job_id`` has reported a unit done (or ended); return it."""
    from study.jobs import get_job

    deadline = time.monotonic() + timeout
    while True:
        with open_workspace_session(settings) as session:
            job = get_job(job_id, session=session)
        if job.done > 0 or not job.running:
            return job
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} reported nothing in {timeout:.0f} s: {job}")
        time.sleep(0.3)
