"""A page follows the run it has just started, before that run exists.

A page that starts a study as a job opens the new run with ``url_open`` and reruns, but
the run is written by the job's process a moment (or minutes, on a loaded machine) later.
Until then the run picker does not know the name: it said ``unknown run`` and showed the
first stored run (the demo's), whose report and downloads then passed for the new run's,
and a reload lost the new run's progress. :func:`follow_job` keeps the address bar's value
and shows the job making it instead, so the page stays on the started run through reloads
and opens its results when they exist.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import streamlit as st

from app.ui.db import page_session
from app.ui.job_panel import job_panel
from app.ui.safe import plain_message
from study.jobs import list_jobs


def follow_job(
    *,
    param: str,
    options: Collection[str],
    kind: str,
    scope_of: Callable[[str], Mapping[str, Any] | None],
    key: str,
    what: str = "run",
    label_of: Callable[[str], str] = str,
) -> None:
    """Show the job making the address bar's ``param`` value and stop, while it is no option.

    Returns at once (the page goes on) when the URL has no ``param``, when its value is
    among ``options``, or when no job of ``kind`` has the value's scope (the picker then
    says the value is unknown, as for any link).

    Args:
        param: The query parameter of the page's run picker.
        options: The values the picker offers now (the stored runs).
        kind: The kind of job that makes a run (``"conflicts study"``).
        scope_of: The jobs' scope for a value (``{"run": name}``), ``None`` for none.
        key: The job panel's key (unique on the page).
        what: What the value names, in the page's words.
        label_of: The value as the page names it (``run:x`` → ``x``).
    """
    values = st.query_params.get_all(param)
    if not values or values[-1] in options:
        return
    value = values[-1]
    scope = scope_of(value)
    if scope is None:
        return
    with page_session() as session:
        made = list_jobs(session=session, kind=kind, scope=scope, limit=1)
    if not made:
        return
    # recent_s: a job that ended between the page's read of its runs and this panel
    panel = job_panel(kind=kind, scope=scope, key=key, recent_s=60.0)
    if panel.finished is not None:
        st.rerun()  # it has ended: the picker knows the run on the rerun (once per job)
    st.info(
        plain_message(
            f"Following {what} '{label_of(value)}': its results show here once its job has stored "
            "them (reloading keeps it)."
        )
    )
    st.stop()
