"""The running command's side of a job: stage, progress, heartbeat and end into its row.

One :class:`JobReporter` per process (:func:`current_reporter`). A command started by
:func:`study.jobs.submit_job` attaches to its row (``DRIFTLENS_JOB_ID``); one started from
a shell creates its row when it first shows progress (:func:`ensure_reporter`). Progress
callbacks only set fields in memory; a daemon thread writes them at most every
``FLUSH_S`` seconds (and a heartbeat every ``HEARTBEAT_S``) on its own connection, so a
command's own long write transaction (SQLite allows one writer) delays a progress line,
never the work. A new stage is written at once: a page shows what the command does before
its first unit is done. Every write is conditional on the row still being ``running``, so
a cancellation is never overwritten.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col

from storage.job_models import Job
from storage.types import utcnow

#: Progress is written at most this often (seconds).
FLUSH_S = 0.5
#: A live process touches its row at least this often, so other hosts see it alive.
HEARTBEAT_S = 10.0

_lock = threading.Lock()
_current: JobReporter | None = None


class JobReporter:
    """Writes one job row's progress from the process that runs the job."""

    def __init__(self, engine: Engine, job_id: int) -> None:
        self.engine = engine
        self.job_id = job_id
        self._values: dict[str, Any] = {}
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._mutex = threading.Lock()
        self._thread = threading.Thread(
            target=self._loop, name=f"driftlens-job-{job_id}", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------------ reports
    def stage(self, text: str, *, unit: str | None = None) -> None:
        """A new stage begins: its name is written at once (by the writer thread, so a busy
        database never holds up the command), its counts start at 0/0."""
        now = utcnow()
        values: dict[str, Any] = {"stage": text[:200], "done": 0, "total": 0}
        values["stage_started_at"] = now
        if unit is not None:
            values["unit"] = unit
        with self._mutex:
            self._values.update(values)
        self._dirty.set()  # the writer thread writes it now, not after FLUSH_S

    def progress(self, done: int, total: int) -> None:
        """The current stage's ``(done, total)``; written within ``FLUSH_S``."""
        with self._mutex:
            self._values["done"] = int(done)
            self._values["total"] = int(total)
        self._dirty.set()

    def result(self, values: Mapping[str, Any]) -> None:
        """What the command produced (merged into the row's ``result`` when it ends)."""
        with self._mutex:
            merged = dict(self._values.get("result") or {})
            merged.update(values)
            self._values["result"] = merged
        self._dirty.set()

    def finish(self, state: str, *, error: str | None = None) -> None:
        """End the job (``done``, ``failed`` or ``interrupted``) and stop the writer."""
        self._stop.set()
        self._dirty.set()
        self._thread.join(timeout=5.0)
        with self._mutex:
            self._values.update(state=state, finished_at=utcnow())
            if error is not None:
                self._values["error"] = error[:1000]
        self.flush()

    # ------------------------------------------------------------------ writing
    def flush(self) -> None:
        """Write what changed since the last write (skipped while the database is busy)."""
        with self._mutex:
            values = dict(self._values)
        values["updated_at"] = utcnow()
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    update(Job)
                    .where(col(Job.id) == self.job_id, col(Job.state) == "running")
                    .values(**values)
                )
        except SQLAlchemyError:
            # Busy or briefly unreachable: the values stay and go with the next write.
            self._dirty.set()
            return

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait(timeout=HEARTBEAT_S)
            if self._stop.is_set():
                return
            self._dirty.clear()
            self.flush()
            self._stop.wait(FLUSH_S)


def current_reporter() -> JobReporter | None:
    """This process's reporter, if its command is a job."""
    return _current


def attach_reporter(engine: Engine, job_id: int) -> JobReporter:
    """Report into the submitted job row ``job_id`` (its pid and host are set now)."""
    global _current
    with _lock:
        if _current is None:
            with engine.begin() as conn:
                conn.execute(
                    update(Job)
                    .where(col(Job.id) == job_id)
                    .values(pid=os.getpid(), host=socket.gethostname(), updated_at=utcnow())
                )
            _current = JobReporter(engine, job_id)
        return _current


def ensure_reporter(
    engine: Engine,
    *,
    kind: str,
    title: str,
    argv: Sequence[str],
    scope: Mapping[str, Any] | None = None,
) -> JobReporter:
    """The reporter of this process, creating a ``shell`` job row on first use."""
    global _current
    with _lock:
        if _current is None:
            now = utcnow()
            with engine.begin() as conn:
                job_id = conn.execute(
                    insert(Job)
                    .values(
                        kind=kind,
                        title=title[:200],
                        argv=list(argv),
                        scope=dict(scope or {}),
                        origin="shell",
                        state="running",
                        stage="starting",
                        done=0,
                        total=0,
                        unit="",
                        host=socket.gethostname(),
                        pid=os.getpid(),
                        started_at=now,
                        updated_at=now,
                        stage_started_at=now,
                    )
                    .returning(col(Job.id))
                ).scalar_one()
            assert job_id is not None
            _current = JobReporter(engine, int(job_id))
        return _current


def record_result(**values: Any) -> None:
    """Store what the command produced in its job row (a no-op outside a job)."""
    reporter = _current
    if reporter is not None:
        reporter.result(values)


def finish_current(state: str, *, error: str | None = None) -> None:
    """End this process's job, if it has one (called once, by the CLI's entry point)."""
    global _current
    with _lock:
        reporter, _current = _current, None
    if reporter is not None:
        reporter.finish(state, error=error)


def shell_argv(argv: Sequence[str]) -> list[str]:
    """A shell command line without the root options ``--workspace``/``-w``/``--db``
    (the database URL may hold a password) and ``--debug``."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--workspace", "-w", "--db"):
            skip = True
            continue
        if arg.startswith(("--workspace=", "--db=")) or arg == "--debug":
            continue
        out.append(arg)
    return out
