"""The one job component every page uses: its running jobs, their end, and *Cancel*.

A page names the jobs it shows by ``kind`` and ``scope`` (:mod:`study.jobs`). The panel
shows each running one — stage, ``done/total`` units, rate, ETA and a *Cancel* button —
in a fragment that reruns every second without rerunning the page; when one ends, the
whole page reruns, and :func:`job_panel` returns the job that has just finished so the
page can show its result (each finished job once per browser session, and only a job
that ended after the session first showed the panel: a tab opened later, or a reload after
the end, shows no "done" box of an old job). The newest job of the scope that failed, was
cancelled or interrupted shows its one-line error with *Resume*. The jobs are processes of
their own: reloading, leaving or closing the tab never stops them, and a reload shows
them again.

Typical use::

    panel = job_panel(kind="analyze", scope={"run": run}, key="analysis")
    if panel.finished is not None:
        open_analysis(panel.finished.result["analysis"])
    if st.button("Run analysis", disabled=panel.busy is not None):
        start_job(key="analysis", kind="analyze", title=..., argv=[...], scope={"run": run})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import streamlit as st

from app.ui.db import page_session, page_settings
from app.ui.safe import plain_message, show_plain
from storage.errors import DriftLensError
from storage.types import utcnow
from study.jobs import (
    JobRecord,
    cancel_failure,
    cancel_in_background,
    cancelling,
    list_jobs,
    resume_job,
    submit_job,
    submit_study_job,
)

#: Seconds between two refreshes of the running jobs' lines.
REFRESH_S = 1.0
#: A job that ended this long before a browser session first opened the page still shows
#: its outcome there once. 0: only ends after the panel was first shown (a job this session
#: started or saw running); with minutes, every new tab repeated an old job's "done" box.
RECENT_S = 0.0


@dataclass(frozen=True)
class JobPanel:
    """What a page learns from :func:`job_panel`.

    Attributes:
        busy: ``"<title> is running."`` while a job of the scope runs (the reason to
            disable the page's start button), else ``None``.
        finished: The job of the scope that has just ended ``done``, once; else ``None``.
        running: The running jobs of the scope, newest first.
    """

    busy: str | None
    finished: JobRecord | None
    running: tuple[JobRecord, ...]


def _memory(key: str, recent_s: float = RECENT_S) -> dict[str, Any]:
    # Per browser session and panel: since when it looks, and which ends it has returned.
    since = utcnow() - timedelta(seconds=recent_s)
    return st.session_state.setdefault(f"_job_panel:{key}", {"since": since, "handled": []})


def start_job(
    *,
    key: str,
    kind: str,
    title: str,
    argv: Sequence[str],
    scope: Mapping[str, Any] | None = None,
    unit: str = "",
) -> JobRecord | None:
    """Submit a job from a page (the panel ``key`` then shows it); ``None`` after showing
    why it could not start."""
    _memory(key)  # the panel watches from before the job exists (if it did not already)
    settings = page_settings()
    try:
        with page_session() as session:
            return submit_job(
                session=session,
                workspace=settings.workspace,
                db_url=settings.db_url,
                kind=kind,
                title=title,
                argv=argv,
                scope=scope,
                unit=unit,
            )
    except DriftLensError as exc:
        show_plain(exc)
        return None


def start_study_job(
    *,
    key: str,
    runner: str,
    job: str,
    args: Mapping[str, Any],
    title: str,
    scope: Mapping[str, Any] | None = None,
    unit: str = "",
) -> JobRecord | None:
    """Submit a study-level job (:func:`study.jobs.submit_study_job`: an instrument's or a
    shared service's, no command line) from a page; ``None`` after showing why not."""
    _memory(key)
    settings = page_settings()
    try:
        with page_session() as session:
            return submit_study_job(
                session=session, workspace=settings.workspace, db_url=settings.db_url,
                runner=runner, job=job, args=args, title=title, scope=scope, unit=unit,
            )  # fmt: skip
    except DriftLensError as exc:
        show_plain(exc)
        return None


def _after(when: datetime | None, since: datetime) -> bool:
    return when is not None and when >= since


def job_panel(
    *,
    kind: str | Sequence[str],
    scope: Mapping[str, Any] | None = None,
    key: str,
    recent_s: float = RECENT_S,
) -> JobPanel:
    """Show the page's jobs and return what the page needs of them.

    Args:
        kind: The jobs' kind(s), e.g. ``"analyze"`` (the command path).
        scope: Only jobs whose scope holds these pairs (``{"run": "demo"}``).
        key: A name unique on the page (widget keys and memory hang on it).
        recent_s: A job that ended up to this long before the page was first opened in
            this browser session is still returned as ``finished`` (once); 0 for only the
            ends this session saw happen (e.g. a page opened on a link keeps the link).
    """
    memory = _memory(key, recent_s)
    # Everything the panel shows is in one container, drawn whether or not it shows
    # anything: the elements after it keep their place (a launch form's expander whose
    # place moved when a job ended was drawn anew, collapsed, on the next edit).
    with st.container(key=f"job-panel-{key}"):
        return _panel(kind=kind, scope=scope, key=key, memory=memory)


def _panel(
    *,
    kind: str | Sequence[str],
    scope: Mapping[str, Any] | None,
    key: str,
    memory: dict[str, Any],
) -> JobPanel:
    with page_session() as session:
        jobs = list_jobs(session=session, kind=kind, scope=scope, limit=20)
    running = tuple(j for j in jobs if j.running)
    finished = next(
        (
            j
            for j in jobs
            if j.state == "done"
            and _after(j.finished_at, memory["since"])
            and j.id not in memory["handled"]
        ),
        None,
    )
    if finished is not None:
        memory["handled"].append(finished.id)
    stopped = next((j for j in jobs if not j.running), None)
    if stopped is not None and stopped.state != "done" and stopped.resumed_by is None:
        _show_stopped(stopped, key=key)
    if running:
        _live(running, kind=kind, scope=scope, key=key)
    busy = f"{running[0].title} is running." if running else None
    return JobPanel(busy=busy, finished=finished, running=running)


def stopped_line(job: JobRecord) -> str:
    """One line on a job that stopped without finishing: its title, state and why.

    A cancelled job's error is the word ``cancelled`` itself: said once, not
    "cancelled: cancelled".
    """
    why = (job.error or "").strip()
    if not why or why == job.state:
        return f"{job.title} {job.state}."
    return f"{job.title} {job.state}: {why}"


def _show_stopped(job: JobRecord, *, key: str) -> None:
    box = st.container(key=f"job-stopped-{key}")
    box.error(plain_message(stopped_line(job)))
    if box.button(
        "Resume",
        key=f"job-resume-{key}-{job.id}",
        help="Run the same job again; it goes on from what is already stored.",
    ):
        settings = page_settings()
        try:
            with page_session() as session:
                resume_job(
                    job.id, session=session, workspace=settings.workspace, db_url=settings.db_url
                )
        except DriftLensError as exc:
            show_plain(exc)
        else:
            st.rerun()


def job_line(job: JobRecord) -> str:
    """One plain line of a running job: title, stage, units, rate, ETA and elapsed time."""
    return f"{job.title}: {job.progress_line()} ({job.elapsed_s():.0f} s)"


def _live(
    running: tuple[JobRecord, ...],
    *,
    kind: str | Sequence[str],
    scope: Mapping[str, Any] | None,
    key: str,
) -> None:
    ids = {j.id for j in running}

    @st.fragment(run_every=REFRESH_S)
    def _tick() -> None:
        with page_session() as session:
            now = [
                j for j in list_jobs(session=session, kind=kind, scope=scope, limit=20) if j.running
            ]
        if {j.id for j in now} != ids:
            st.rerun()  # one ended (or another began): the whole page shows the outcome
        for job in now:
            # The browser tests skip the ticking text of containers keyed *-progress*.
            box = st.container(key=f"job-progress-{key}-{job.id}")
            box.status(plain_message(job_line(job)), state="running", expanded=False)
            box.progress(min(1.0, job.done / job.total) if job.total else 0.0)
            left, right = box.columns([4, 1])
            left.caption(
                "It runs in the background: reload, leave or close the tab; it goes on. "
                "All jobs are on the Jobs page."
            )
            failure = cancel_failure(job.id)
            if failure:
                box.caption(plain_message(failure))
            stopping = cancelling(job.id)
            if stopping:
                left.caption("Cancelling: it ends in the background.")
            if right.button("Cancel", key=f"job-cancel-{key}-{job.id}", disabled=stopping):
                # answers at once: the row's write may wait on the job's own transaction
                with page_session() as session:
                    try:
                        cancel_in_background(job.id, session=session, open_session=page_session)
                    except DriftLensError as exc:
                        show_plain(exc)
                st.rerun()

    _tick()


def demo_button(
    label: str,
    *,
    key: str,
    kind: str,
    title: str,
    argv: Sequence[str],
    scope: Mapping[str, Any] | None = None,
) -> bool:
    """The panel of an instrument's simulated demo job, and the button that starts it.

    Args:
        label: The button's text (disabled while the demo runs).
        key: The button's key; its panel's is ``<key>-job``.
        kind: The job's kind (``"disposition demo"``).
        title: The job's title.
        argv: The job's command line.
        scope: The job's scope, if any.

    Returns:
        Whether a demo job has just finished (the page then opens its result).
    """
    demo = job_panel(kind=kind, key=f"{key}-job")
    if st.button(label, key=key, disabled=demo.busy is not None) and start_job(
        key=f"{key}-job", kind=kind, title=title, argv=argv, scope=scope
    ):
        st.rerun()
    return demo.finished is not None
