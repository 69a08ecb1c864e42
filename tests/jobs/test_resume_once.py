"""Issue 37: two simultaneous Resume calls on one stopped job start one job, not two."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlmodel import select

from storage.errors import InputError
from storage.job_models import Job
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.jobs import resume_job
from study.jobs import service as job_service
from tests.study.jobs_support import wait_for_jobs


def test_two_simultaneous_resumes_start_one_job(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = resolve_settings(workspace=workspace)
    with open_workspace_session(settings) as session:
        stopped = Job(kind="generate", title="t", argv=["questions", "list"], origin="page",
                      state="failed", stage="failed", host="h")  # fmt: skip
        session.add(stopped)
        session.commit()
        job_id = stopped.id
    assert job_id is not None
    # both calls pass their checks ("not resumed yet") before either starts a job: the
    # race two Resume clicks in two tabs run into
    both_checked = threading.Barrier(2, timeout=60)
    real_get_job = job_service.get_job
    calls = {"n": 0}

    def get_job_then_wait(jid: int, *, session: object) -> object:
        job = real_get_job(jid, session=session)  # type: ignore[arg-type]
        calls["n"] += 1
        if calls["n"] <= 2:
            both_checked.wait()
        return job

    monkeypatch.setattr(job_service, "get_job", get_job_then_wait)
    outcomes: list[object] = []

    def resume() -> None:
        with open_workspace_session(settings) as session:
            try:
                outcomes.append(resume_job(job_id, session=session, workspace=workspace,
                                           db_url=settings.db_url))  # fmt: skip
            except InputError as exc:
                outcomes.append(exc)

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    monkeypatch.setattr(job_service, "get_job", real_get_job)
    refused = [o for o in outcomes if isinstance(o, InputError)]
    assert len(outcomes) == 2 and len(refused) == 1, outcomes
    assert "already" in str(refused[0])
    wait_for_jobs(settings)
    with open_workspace_session(settings) as session:
        jobs = session.exec(select(Job)).all()
    assert len(jobs) == 2  # the stopped job and exactly one new one
    new = next(j for j in jobs if j.id != job_id)
    assert next(j for j in jobs if j.id == job_id).resumed_by == new.id
