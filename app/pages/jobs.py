"""Jobs: every long action of the workspace (from a page or a shell), with Resume/Cancel."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui.db import page_session, page_settings
from app.ui.job_panel import job_line
from app.ui.page_stop import stop_with_info
from app.ui.router import PAGES_DIR
from app.ui.safe import plain_message, show_plain
from storage.errors import DriftLensError
from study.jobs import (
    JobRecord,
    cancel_failure,
    cancel_in_background,
    cancelling,
    list_jobs,
    resume_job,
)
from study.jobs.commands import command_line
from study.jobs.links import result_link

st.title("Jobs")
st.caption(
    "Long actions run as background processes: reloading, leaving or closing a page never "
    "stops them. Commands run from a shell show here too. A stopped job can be resumed: "
    "it goes on from what is already stored."
)

STATES = ("running", "done", "failed", "cancelled", "interrupted")
with page_session() as session:
    jobs = list_jobs(session=session, limit=500)

if not jobs:
    stop_with_info("No jobs yet: start one from a page (Runs, Analysis, Rounds, Validation …).")

running_ids = {j.id for j in jobs if j.running}
if running_ids:

    @st.fragment(run_every=1.0)
    def _live() -> None:
        # Only these lines tick; the page reruns when a job starts or ends (a rerun every
        # second would swallow clicks on Cancel / Resume).
        with page_session() as session:
            now = list_jobs(session=session, states=["running"], limit=500)
        if {j.id for j in now} != running_ids:
            st.rerun()
        box = st.container(key="job-progress-jobs-page")  # tests skip its ticking text
        for j in now:
            box.text(job_line(j))

    st.subheader("Running")
    _live()

shown_states = st.multiselect("States", STATES, default=list(STATES), key="jobs_states")
listed = [j for j in jobs if j.state in shown_states]
st.dataframe(
    pd.DataFrame(
        [
            {
                "job": j.id,
                "state": j.state,
                "title": j.title,
                "kind": j.kind,
                "from": j.origin,
                "progress": j.progress_line(),
                "started (UTC)": f"{j.started_at:%Y-%m-%d %H:%M:%S}",
                "seconds": round(j.elapsed_s()),
                "error": j.error or "",
            }
            for j in listed
        ]
    ),
    hide_index=True,
    width="stretch",
)

by_id = {j.id: j for j in listed}
if not by_id:
    st.stop()


def _label(job_id: int) -> str:
    job = by_id[job_id]
    return f"#{job.id} · {job.state} · {job.title}"


wanted = st.query_params.get("job")
ids = list(by_id)
index = ids.index(int(wanted)) if wanted and wanted.isdigit() and int(wanted) in by_id else 0
if wanted and (not wanted.isdigit() or int(wanted) not in by_id):
    st.caption(plain_message(f"unknown job '{wanted}'"))
picked = st.selectbox("Job", ids, index=index, format_func=_label, key="jobs_pick")
job: JobRecord = by_id[picked]
if st.query_params.get("job") != str(job.id):
    st.query_params["job"] = str(job.id)

st.text(job_line(job) if job.running else f"{job.title}: {job.state} — {job.progress_line()}")
st.code(command_line(job.argv), language="bash")
if job.error:
    show_plain(f"{job.state}: {job.error}")
if job.resumed_by is not None:
    st.caption(f"Resumed as job {job.resumed_by}.")
link = result_link(job)
if link is not None:
    page, params, text = link
    # the path the router registered the page under (st.navigation knows only those)
    st.page_link(
        str(PAGES_DIR / page), label=text, query_params=params, icon=":material/open_in_new:"
    )
if job.log_path:
    st.caption(plain_message(f"Log: {job.log_path} (in the workspace)"))

left, right = st.columns(2)
failure = cancel_failure(job.id)
if failure:
    show_plain(failure)
stopping = job.running and cancelling(job.id)
if stopping:
    st.info("Cancelling: the job ends in the background; this page shows it once it has.")
if job.running and left.button("Cancel", key=f"jobs-cancel-{job.id}", disabled=stopping):
    # answers at once: the row's write may wait on the job's own write transaction
    try:
        with page_session() as session:
            cancel_in_background(job.id, session=session, open_session=page_session)
    except DriftLensError as exc:
        show_plain(exc)
    else:
        st.rerun()
if job.resumable and right.button("Resume", key=f"jobs-resume-{job.id}", type="primary"):
    settings = page_settings()
    try:
        with page_session() as session:
            new = resume_job(
                job.id, session=session, workspace=settings.workspace, db_url=settings.db_url
            )
    except DriftLensError as exc:
        show_plain(exc)
    else:
        st.query_params["job"] = str(new.id)
        st.rerun()
