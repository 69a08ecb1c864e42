"""The live progress box of a background job (``app.ui.jobs``) on a page.

Rounds and validation experiments run in a thread of the app server; their pages show the
same ticking box, refreshed every second as a fragment, and rerun the whole page once the
job has finished so that its outcome and result appear.
"""

from __future__ import annotations

import streamlit as st

from app.ui.jobs import Job


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
