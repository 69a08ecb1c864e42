"""Disposition drift: arms of a study, drift per battery with CI / MDD / bound, dose curve,
null test. Arm, model and battery names come from the database: they are shown in
dataframes or escaped Markdown only."""

from __future__ import annotations

import streamlit as st
from sqlmodel import col, func, select

from app.ui.db import page_session, page_settings
from app.ui.safe import show_plain
from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
from storage.errors import DriftLensError
from storage.repo.disposition import list_studies
from study.disposition.demo import DEMO_STUDY, run_disposition_demo
from study.disposition.report import StudyView, study_view

st.title("Disposition drift")
st.caption(
    "Has a model's stable tendency (declining extra resources, accepting being stopped, "
    "refusing harm-shaped requests) moved between versions? Drift of each arm's aligned "
    "rate against its reference arm, 95% stem-bootstrap intervals, MDD, equivalence bound "
    "and the same-arm null test."
)
reports = page_settings().workspace / "reports"
if st.button("Run the simulated demo (about a minute)"):
    try:
        with st.spinner("Answering the batteries with the simulator…"), page_session() as s:
            run_disposition_demo(session=s, out_dir=reports / "disposition-demo", bootstrap=2000)
    except DriftLensError as exc:
        show_plain(exc)


@st.cache_resource(max_entries=8, show_spinner=False)
def _study_view(db_url: str, study: str, revision: tuple[int, ...]) -> StudyView:
    """The study's tables and figure, computed once per data revision (the stem bootstrap
    takes seconds; reruns of the page and the next visit reuse it)."""
    with page_session() as session:
        return study_view(study, session=session)


def _revision() -> tuple[int, ...]:
    # The largest ids of the rows the view reads: an index lookup each, and a new answer,
    # score or arm changes the token.
    with page_session() as session:
        return tuple(
            int(session.exec(select(func.coalesce(func.max(col(m.id)), 0))).one() or 0)
            for m in (DispositionArm, DispositionResponse, DispositionScore)
        )


with page_session() as session:
    studies = list_studies(session=session)
if not studies:
    st.info("No disposition study yet: run the demo above or `driftlens disposition run`.")
    st.stop()
study = st.selectbox(
    "Study", studies, index=studies.index(DEMO_STUDY) if DEMO_STUDY in studies else 0
)
try:
    # Visible in the page itself: the status widget is hidden (toolbarMode minimal).
    with st.spinner(
        "Analysing the study: drift per arm with 2,000 stem-bootstrap replicates…",
        show_time=True,
    ):
        view = _study_view(page_settings().db_url, study, _revision())
except DriftLensError as exc:
    show_plain(exc)
    st.stop()

if view.simulated:
    st.warning("SIMULATED DATA — every answer comes from the built-in disposition simulator.")
st.subheader("Arms")
st.dataframe(view.arms, hide_index=True)
st.subheader("Dose curve")
if view.dose_curve is not None:
    st.pyplot(view.dose_curve)
    st.caption("Circled: the first dose whose 95% interval excludes 0; x: a second training seed.")
st.subheader("Drift per battery and arm")
st.dataframe(view.drift, hide_index=True)
st.subheader("Null test (sample 1 vs sample 2)")
st.text(view.null_line)
st.dataframe(view.null, hide_index=True)
st.subheader("Noise shares (%)")
st.dataframe(view.noise, hide_index=True)
if not view.awareness.empty:
    st.subheader("Test awareness (LLM judge, 1-7)")
    st.dataframe(view.awareness, hide_index=True)
    st.text(view.awareness_line)
