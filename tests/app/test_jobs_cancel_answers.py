"""Issue 37 (Under load): the Jobs page's *Cancel* answers at once, the job ends after.

The page wrote the job's row in its own script run: while the job held SQLite's write lock
(it writes its answers in small transactions, more often the busier the machine), the
click waited the 30 s busy timeout out (35 s measured under load). Here the lock is held
by a connection of the test for the whole click: the page must answer while it is held
(it only reads), and the job must be cancelled and its process ended once it is free.
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from storage.job_models import Job
from storage.settings import Settings, resolve_settings
from storage.workspace import open_workspace_session
from study.jobs import get_job
from tests.app.apptest_support import open_page


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for a job's process: its own process group, as a page job's is."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _wait(what: str, check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} after {timeout:.0f} s")
        time.sleep(0.1)


def _state(settings: Settings, job_id: int) -> str:
    with open_workspace_session(settings) as session:
        return get_job(job_id, session=session).state


def test_cancel_answers_while_the_job_holds_the_write_lock(
    sleeper: subprocess.Popen[bytes],
) -> None:
    settings = resolve_settings()
    with open_workspace_session(settings) as session:
        row = Job(kind="generate", title="Generate x", argv=["generate"], origin="page",
                  host=socket.gethostname(), pid=sleeper.pid, state="running")  # fmt: skip
        session.add(row)
        session.commit()
        job_id = row.id
    assert job_id is not None
    at = open_page("jobs.py")
    path = settings.db_url.removeprefix("sqlite:///")
    lock = sqlite3.connect(path, timeout=30, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # the job's write transaction, held through the click
    try:
        cancel = next(b for b in at.button if b.label == "Cancel")
        # a page run waiting on the lock would outlast this (the busy timeout is 30 s)
        cancel.click().run(timeout=20)
        assert not at.exception, [e.value for e in at.exception]
        shown = " ".join(str(i.value) for i in at.info)
        assert "Cancelling" in shown, shown
        assert next(b for b in at.button if b.label == "Cancel").disabled
        assert _state(settings, job_id) == "running"  # nothing could be written yet
        assert sleeper.poll() is None
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    # the lock is free: the cancellation is written, then the process is ended
    _wait("the job was not cancelled", lambda: _state(settings, job_id) == "cancelled")
    _wait("the job's process did not end", lambda: sleeper.poll() is not None)
