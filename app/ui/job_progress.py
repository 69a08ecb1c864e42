"""The live progress box of a background job (``app.ui.jobs``) on a page.

Rounds and validation experiments run in a thread of the app server; their pages show the
same ticking box, refreshed every second as a fragment, and rerun the whole page once the
job has finished so that its outcome and result appear (:func:`show_job`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st

from app.ui.jobs import Job, forget_job, get_job
from app.ui.safe import show_plain


@dataclass(frozen=True)
class JobView:
    """What a page needs to know of its background job after :func:`show_job`.

    Attributes:
        busy: ``"<label> is running."`` while the job runs (the reason its start button is
            disabled), else ``None``.
        done: the job that has just finished without an error, for the page to show its
            result; ``None`` otherwise.
    """

    busy: str | None
    done: Job | None


#: How long a finished job's outcome is shown to a tab that did not see it run (seconds).
RECENT_S = 600.0


def show_job(key: str, *, what: str) -> JobView:
    """Show the job under ``key``: its progress box while it runs; once it has finished, its
    outcome (or its error in one plain line) once in every browser session (tab) that saw
    it run or opens the page within :data:`RECENT_S` of its end.

    Args:
        key: The job's key (``app.ui.jobs``).
        what: What the job is, for the caption ("round", "experiment").
    """
    job = get_job(key)
    if job is None:
        return JobView(busy=None, done=None)
    # One job run is one (key, start) pair: a session marks the runs it saw and showed.
    marker = f"job::{key}::{job.started}"
    if job.running:
        st.session_state[f"{marker}::saw"] = True
        show_job_progress(job, what=what)
        return JobView(busy=f"{job.label} is running.", done=None)
    saw = st.session_state.get(f"{marker}::saw", False)
    recent = job.ended is not None and time.monotonic() - job.ended < RECENT_S
    if st.session_state.get(f"{marker}::shown") or not (saw or recent):
        if not recent:
            forget_job(key)  # every tab that was to see it has had its chance
        return JobView(busy=None, done=None)
    st.session_state[f"{marker}::shown"] = True
    if job.error is not None:
        show_plain(f"{job.label} stopped: {job.error}")
        return JobView(busy=None, done=None)
    return JobView(busy=None, done=job)


def show_job_progress(job: Job, *, what: str) -> None:
    """Show ``job``'s stage, labeled pairs and elapsed time until it finishes.

    Args:
        job: The running job.
        what: What the job is, for the caption ("round", "experiment").
    """

    @st.fragment(run_every=1.0)
    def _progress() -> None:
        if job.finished:
            st.rerun()  # the whole page: show the outcome and the new result
        box = st.container(key="round-progress")  # browser tests skip its ticking text
        counts = f" — {job.done}/{job.total} (response, labeler) pairs labeled" if job.total else ""
        box.status(
            f"{job.label}: {job.stage}{counts} ({job.elapsed():.0f} s)",
            state="running",
            expanded=False,
        )
        box.progress(job.done / job.total if job.total else 0.0)
        box.caption(f"The {what} goes on if you leave this page; come back to see it finish.")

    _progress()
