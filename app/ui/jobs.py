"""Long work of a page in a background thread of the app server, so leaving the page (or
reloading it) does not stop it.

A Streamlit script is stopped whenever its page is left or a widget is touched; labeling
a round takes longer than a researcher waits without clicking. A job runs the service call
in a daemon thread of the server with its own database session, records its stage and
``(done, total)`` progress, and any page run can look it up by key to show progress or
the outcome. Jobs live as long as the server process: a killed server leaves an
interrupted round behind (``ontology.rounds.round_state``), which the page offers to
resume.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from storage.errors import DriftLensError

Progress = Callable[[int, int], None]
Stage = Callable[[str], None]


@dataclass
class Job:
    """One background job: what it is doing now and, once finished, its outcome."""

    key: str
    label: str
    stage: str = "starting"
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    finished: bool = False
    result: Any = None
    error: str | None = None
    reported: bool = False

    @property
    def running(self) -> bool:
        """Whether the job's thread is still working."""
        return not self.finished

    def elapsed(self) -> float:
        """Seconds since the job started."""
        return time.monotonic() - self.started


_JOBS: dict[str, Job] = {}
_LOCK = threading.Lock()


def get_job(key: str) -> Job | None:
    """The job under ``key`` (running or finished and not yet forgotten)."""
    with _LOCK:
        return _JOBS.get(key)


def forget_job(key: str) -> None:
    """Drop a finished job once its outcome was shown."""
    with _LOCK:
        job = _JOBS.get(key)
        if job is not None and job.finished:
            del _JOBS[key]


def start_job(key: str, label: str, work: Callable[[Progress, Stage], Any]) -> Job:
    """Run ``work(progress, stage)`` in a daemon thread under ``key``.

    Raises:
        RuntimeError: a job under ``key`` is still running.
    """
    with _LOCK:
        current = _JOBS.get(key)
        if current is not None and current.running:
            raise RuntimeError(f"{current.label} is still running")
        job = Job(key=key, label=label)
        _JOBS[key] = job

    def progress(done: int, total: int) -> None:
        job.done, job.total = done, total

    def stage(text: str) -> None:
        job.stage = text

    def target() -> None:
        try:
            job.result = work(progress, stage)
        except DriftLensError as exc:
            job.error = str(exc)
        except Exception as exc:  # shown on the page instead of dying silently in a thread
            job.error = f"{type(exc).__name__}: {exc}"
        finally:
            job.ended = time.monotonic()
            job.finished = True

    threading.Thread(target=target, name=f"driftlens-job-{key}", daemon=True).start()
    return job
