"""A launch form keeps its place on the page around a job's end (issue 37, item 13).

The browser keys each element by its place among its siblings: when a running job's lines
(above the Runs page's *Launch a run* form) went away, or the one-time "done" box did, the
form moved up one place and the next rerun (the first edit after a job) drew it anew,
collapsed. The form's place must be the same while the job runs, when its end is shown and
on the rerun after.
"""

from __future__ import annotations

import os
import socket

from storage.job_models import Job
from storage.settings import resolve_settings
from storage.types import utcnow
from storage.workspace import open_workspace_session
from tests.app.apptest_support import open_page, unescape

ARGV = ["generate", "--model", "sim/default", "--run", "p", "--perturbations", "filler"]


def _place(at: object, label: str) -> int:
    """The expander's index among the main area's top-level elements."""
    children = list(at.main.children.values())  # type: ignore[attr-defined]
    return next(i for i, c in enumerate(children) if getattr(c, "label", None) == label)


def test_the_launch_form_keeps_its_place_around_a_jobs_end() -> None:
    with open_workspace_session(resolve_settings()) as session:
        job = Job(kind="generate", title="Generate p", argv=ARGV, scope={"run": "p"},
                  host=socket.gethostname(), pid=os.getpid(), state="running")  # fmt: skip
        session.add(job)
        session.flush()
        job_id = job.id
    at = open_page("runs.py")
    running = _place(at, "Launch a run")
    with open_workspace_session(resolve_settings()) as session:
        row = session.get(Job, job_id)
        assert row is not None
        row.state, row.finished_at = "done", utcnow()
        session.add(row)
    at.run()
    assert any("Generate p: done." in unescape(str(s.value)) for s in at.success)  # shown
    ended = _place(at, "Launch a run")
    at.run()  # the next edit's rerun
    after = _place(at, "Launch a run")
    assert running == ended == after, (running, ended, after)
