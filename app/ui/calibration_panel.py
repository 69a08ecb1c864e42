"""The judge-human calibration panel: one page section for every study with a judge.

For a Label Studio study whose kind pairs a judge with its annotators
(``annotation.judge_pairs``), the section shows the judge against the human majority
(:func:`study.judge_robustness.study_calibration.calibrate_study`): Cohen's κ, the
weighted κ and Krippendorff's α with bootstrap intervals, the judge's bias on an ordinal
scale, per-class TPR / TNR with Wilson intervals and the confusion matrix; "Not assessed"
with the reason while there is nothing to compare. *Push triage* runs ``driftlens judges
triage STUDY`` as a job (the judge-human and judge-judge disagreements, largest first, as
a Label Studio project of their own). The Human studies page shows it per study; the
instrument pages link to it (:func:`calibration_link`).
"""

from __future__ import annotations

import streamlit as st

from annotation.kinds import get_kind
from app.ui.db import page_session
from app.ui.job_panel import job_panel, start_job
from app.ui.router import PAGES_DIR
from app.ui.safe import show_plain
from storage.errors import DriftLensError

#: The job kind of a triage push (the command path).
TRIAGE_JOB = "judges triage"


def _fmt(value: object) -> str:
    return "n/a" if not isinstance(value, float) or value != value else f"{value:.3f}"


def calibration_panel(
    study: str, *, key: str, server_reason: str | None = None, bootstrap: int = 1000
) -> None:
    """Draw the section for ``study`` (nothing for a study kind without a judge).

    Args:
        study: the pushed Label Studio study.
        key: a name unique on the page (widget and job-panel keys hang on it).
        server_reason: why Label Studio cannot be reached (disables *Push triage*).
        bootstrap: the intervals' bootstrap replicates.
    """
    from study.judge_robustness.study_calibration import (
        agreement_frame,
        calibrate_study,
        class_frame,
        confusion_frame,
    )

    kind = get_kind(study)
    if kind.calibrate is None:
        return
    st.subheader("Judge–human calibration")
    try:
        with page_session() as session:
            cal = calibrate_study(study, session=session, bootstrap=bootstrap, seed=0)
    except DriftLensError as exc:
        show_plain(f"Not assessed: {exc}", kind="info")
    else:
        r = cal.result
        t = cal.table
        st.text(
            f"Judge {t.judge} against the human majority on {r.n} items of {study} "
            f"({t.no_majority} without a majority and {t.no_judge_label} without a judge "
            f"label left out); {bootstrap} bootstrap replicates, Wilson intervals for "
            "the rates."
        )
        cols = st.columns(3 if r.weighted_kappa is None else 4)
        cols[0].metric("Cohen's kappa", _fmt(r.kappa))
        if r.weighted_kappa is not None:
            cols[1].metric("Weighted kappa", _fmt(r.weighted_kappa))
        cols[-2].metric("Krippendorff's alpha", _fmt(r.alpha))
        cols[-1].metric("Judge bias (judge − human)", "n/a" if r.bias is None else f"{r.bias:+.3f}")
        st.markdown("**Agreement (95% bootstrap intervals)**")
        st.dataframe(agreement_frame(r), hide_index=True, key=f"{key}-agreement")
        st.markdown("**Per class: TPR and TNR (Wilson intervals)**")
        st.dataframe(class_frame(r), hide_index=True, key=f"{key}-classes")
        st.markdown("**Confusion matrix (rows: human majority, columns: judge)**")
        st.dataframe(confusion_frame(r), key=f"{key}-confusion")
    if kind.triage_of is not None:
        return  # a triage project's own disagreements are not triaged again
    panel = job_panel(kind=TRIAGE_JOB, scope={"study": study}, key=f"{key}-triage")
    if panel.finished is not None:
        got = panel.finished.result or {}
        st.success(
            f"Triage of {study}: imported {got.get('imported', 0)} of "
            f"{got.get('selected', 0)} tasks into project {got.get('project_id', '?')} "
            f"({got.get('already_present', 0)} were already there)."
        )
    why = server_reason or panel.busy
    if st.button(
        "Push triage",
        key=f"{key}-push-triage",
        disabled=why is not None,
        help=why
        or "The judge-human and judge-judge disagreements, largest first, as a Label Studio "
        f"project of their own ({study}_triage); pushing again adds only new ones.",
    ) and start_job(
        key=f"{key}-triage",
        kind=TRIAGE_JOB,
        title=f"Triage of {study}",
        argv=["judges", "triage", study],
        scope={"study": study},
    ):
        st.rerun()
    if why is not None:
        st.caption(f"Unavailable: {why}")


def calibration_link(study: str) -> None:
    """A link to ``study``'s calibration panel on the Human studies page."""
    st.page_link(
        str(PAGES_DIR / "human_studies.py"),
        label=f"Judge–human calibration and triage ({study})",
        query_params={"study": study},
        icon=":material/balance:",
    )
