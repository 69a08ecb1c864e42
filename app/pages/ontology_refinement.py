"""Refinement: run the refinement loop as a job; its agreement curve, rewrites and exports."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.job_panel import job_panel, start_job
from app.ui.page_stop import stop_with_info
from app.ui.safe import show_plain
from app.ui.self_judging import self_judging_argv, self_judging_checkbox
from app.ui.url_state import url_open, url_select
from ontology.refinement_loop import loop_result
from ontology.refinement_report import (
    curve_rows,
    decision_rows,
    list_loops,
    render_html,
    round_rows,
    to_csv,
)
from ontology.refinement_validation import final_version_tables
from ontology.versions import list_versions, seed_ontologies, version_label
from storage.errors import DriftLensError
from study.jobs import cancel_job
from study.reasoning.run_choices import reasoning_runs

KIND = "ontology refine"
SIM_TRIO = "sim:definitions;seed=1,sim:definitions;seed=2,sim:definitions;seed=3"

st.title("Refinement loop")
st.caption(
    "Label a fresh sample each round, measure agreement, rewrite the most confused leaf pair "
    "and accept the rewrite only if it beats the current text on held-out steps; stop at the "
    "target (held two rounds), a plateau or the round limit."
)

with page_session() as session:
    seed_ontologies(session=session)
    runs = reasoning_runs(session=session)
    versions = [version_label(v) for v in list_versions(session=session)]
    loops = list_loops(session=session)

panel = job_panel(kind=KIND, key="refine")

with (
    st.expander("Start a loop", expanded=not loops),
    st.form("refine-start", enter_to_submit=False),  # Enter in a box never starts a loop
):
    c1, c2, c3 = st.columns(3)
    run = c1.selectbox("Run", runs, help="The generation run rounds sample from.")
    start_version = c2.selectbox(
        "Starting version", versions, index=versions.index("original@1")
        if "original@1" in versions else 0,
    )  # fmt: skip
    rewriter = c3.text_input("Rewriter", "sim/rewriter-operational")
    labelers = st.text_input("Labelers (comma-separated specs)", SIM_TRIO)
    c4, c5, c6, c7 = st.columns(4)
    target = c4.number_input("Target", 0.01, 1.0, 0.83, 0.01)
    trigger = c5.number_input("Trigger", 0.01, 0.99, 0.70, 0.01)
    max_rounds = c6.number_input("Max rounds", 1, 1000, 78)
    sample = c7.number_input("Sample", 1, 10_000, 100)
    c8, c9, c10, c11 = st.columns(4)
    holdout = c8.number_input("Holdout", 0.01, 0.99, 0.3, 0.05)
    margin = c9.number_input("Margin", 0.0, 1.0, 0.02, 0.01)
    review = c10.selectbox("Review", ["auto", "pause"])
    seed = c11.number_input("Seed", 0, 2**31 - 1, 0)
    allow_self = self_judging_checkbox(key="refine-self-judging")
    go = st.form_submit_button(
        "Start loop", disabled=panel.busy is not None, help=panel.busy or "Runs as a job."
    )
if go:
    if not run:
        st.error("No generation run yet: launch one on the Runs page.")
    else:
        argv = [
            "ontology", "refine", "--run", str(run), "--labelers", labelers,
            "--rewriter", rewriter, "--ontology-version", str(start_version),
            "--target", f"{target:g}", "--trigger", f"{trigger:g}",
            "--max-rounds", str(int(max_rounds)), "--sample", str(int(sample)),
            "--holdout", f"{holdout:g}", "--margin", f"{margin:g}", "--review", str(review),
            "--seed", str(int(seed)),
        ]  # fmt: skip
        argv = self_judging_argv(argv, allow_self)
        if start_job(key="refine", kind=KIND, title=f"Refinement loop on {run}", argv=argv,
                     scope={"run": run}, unit="rounds"):  # fmt: skip
            st.rerun()

for job in panel.running:
    if st.button(f"Stop {job.title}", key=f"refine-stop-{job.id}",
                 help="Stops the job; starting the same loop again (Resume) goes on."):  # fmt: skip
        try:
            with page_session() as session:
                cancel_job(job.id, session=session)
        except DriftLensError as exc:
            show_plain(exc)
        else:
            st.rerun()

finished_loop = (panel.finished.result or {}).get("loop") if panel.finished else None
if finished_loop is not None:
    url_open("loop", finished_loop)
    st.rerun()

if not loops:
    stop_with_info("No refinement loop yet: start one above, or `driftlens ontology refine`.")

labels = dict(loops)
chosen = url_select(
    "Loop", list(labels), param="loop", default=loops[0][0], format_func=labels.get, key="loop"
)
if chosen is None:
    st.stop()


@st.fragment(run_every=3.0 if panel.running else None)
def _loop_view(loop_id: int) -> None:
    with page_session() as session:
        result = loop_result(loop_id, session=session)
    config = result.config
    st.write(
        f"{result.start_version} → {result.final_version} · {len(result.rounds)} rounds · "
        f"stopped: {result.stop_reason or result.status}"
    )
    curve = pd.DataFrame(curve_rows(result))
    if not curve.empty:
        lines = alt.Chart(curve).mark_line(point=True).encode(
            x=alt.X("round:Q"), y=alt.Y("agreement:Q", scale=alt.Scale(domain=[0, 1])),
            color="series:N",
        )  # fmt: skip
        rules = pd.DataFrame(
            {"y": [config.get("target", 0.83), config.get("trigger", 0.7)],
             "line": ["target", "trigger"]}
        )  # fmt: skip
        ref = alt.Chart(rules).mark_rule(strokeDash=[4, 3]).encode(y="y:Q", color="line:N")
        accepted = pd.DataFrame(
            [{"round": d["iteration"], "version": d["version"]}
             for d in result.decisions if d["version"]]
        )  # fmt: skip
        layers = lines + ref
        if not accepted.empty:
            layers += (
                alt.Chart(accepted)
                .mark_rule(color="#d62728")
                .encode(x="round:Q", tooltip="version")
            )
        st.altair_chart(layers, use_container_width=True)
    st.subheader("Rewrites tried")
    table = decision_rows(result)
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
    d1, d2, d3, d4 = st.columns(4)
    # on_click="ignore": a download never needs a rerun (docs/architecture.md)
    d1.download_button(
        "Rounds (CSV)", to_csv(round_rows(result)), f"loop-{loop_id}-rounds.csv",
        on_click="ignore",
    )  # fmt: skip
    d2.download_button(
        "Rewrites (CSV)", to_csv(table), f"loop-{loop_id}-rewrites.csv", on_click="ignore"
    )
    d3.download_button(
        "History (JSON)", json.dumps(result.to_json(), indent=2), f"loop-{loop_id}.json",
        on_click="ignore",
    )  # fmt: skip
    # The final version's seed tables label the final round again (seconds to minutes with
    # real labelers), so they are computed on request, not on every refresh.
    tables_key = f"refine-final-tables-{loop_id}"
    if not panel.running and st.button(
        "Compute the final version's agreement tables",
        key=f"refine-tables-{loop_id}",
        help="Cross-model (stored rounds), within-model (a second labeling) and robustness "
        "(every definition paraphrased by the rewriter) for the report.",
    ):
        try:
            with st.spinner("Labeling the final round again…"), page_session() as session:
                st.session_state[tables_key] = final_version_tables(result, session=session)
        except DriftLensError as exc:
            show_plain(exc)
    tables = st.session_state.get(tables_key)
    if tables is not None:
        st.subheader(f"Final version {result.final_version}: agreement (%)")
        for title, rows in (
            ("Cross-model", tables.cross),
            ("Within-model (same labeler, labeled twice)", tables.within),
            ("Robustness (every definition paraphrased)", tables.robustness),
        ):
            st.caption(title)
            st.dataframe(pd.DataFrame(list(rows)), hide_index=True, width="stretch")
        for note in tables.notes:
            show_plain(note, kind="info")
    d4.download_button(
        "Report (HTML)", render_html(result, tables), f"loop-{loop_id}.html", on_click="ignore"
    )


_loop_view(int(chosen))
