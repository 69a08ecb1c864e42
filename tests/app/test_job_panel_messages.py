"""What the job panel says about jobs that ended (issue 37, item 13), through ``AppTest``.

A job that finished before a browser session opened the page is not announced there (it
was, in every tab opened within ten minutes of its end); a cancelled job says so once.
"""

from __future__ import annotations

from datetime import timedelta

from storage.job_models import Job
from storage.settings import resolve_settings
from storage.types import utcnow
from storage.workspace import open_workspace_session
from tests.app.apptest_support import open_page, unescape

ARGV = ["generate", "--model", "sim/default", "--run", "p", "--perturbations", "filler"]


def _messages(at: object) -> str:
    boxes = [*at.success, *at.error]  # type: ignore[attr-defined]
    return unescape(" | ".join(str(b.value) for b in boxes))


def test_a_new_tab_does_not_announce_a_job_that_ended_before_it_opened() -> None:
    with open_workspace_session(resolve_settings()) as session:
        session.add(Job(kind="generate", title="Generate p", argv=ARGV, scope={"run": "p"},
                        state="done", result={"run": "p"},
                        finished_at=utcnow() - timedelta(seconds=60)))  # fmt: skip
    at = open_page("runs.py")
    assert "Generate p: done." not in _messages(at), _messages(at)


def test_a_cancelled_job_says_cancelled_once() -> None:
    with open_workspace_session(resolve_settings()) as session:
        session.add(Job(kind="generate", title="Generate p", argv=ARGV, scope={"run": "p"},
                        state="cancelled", error="cancelled", finished_at=utcnow()))  # fmt: skip
    at = open_page("runs.py")
    shown = _messages(at)
    assert "Generate p cancelled." in shown, shown
    assert "cancelled: cancelled" not in shown, shown
