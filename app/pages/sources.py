"""Source reliance: own answer vs user vs document assertions (tables and figures).

Shows a run stored in the database (``driftlens sources run``) or a run folder written by
``sources run`` / ``sources demo`` (``probes.csv`` + ``stats.json``), or runs the simulated
demo. Model and dataset names come from files and
models: they are shown in dataframes, ``st.text`` or escaped Markdown only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from app.ui.db import page_session, page_settings
from app.ui.safe import escape_markdown, show_plain
from storage.errors import DriftLensError
from study.sources.demo import run_sources_demo
from study.sources.report import (
    discrimination_table,
    effect_lines,
    influence_table,
    instruction_table,
    kl_figure,
    quadrant_figure,
    variant_table,
)
from study.sources.store import source_run_lines, stored_run_result
from study.sources.table import read_sources_csv


def _folders(root: Path) -> list[Path]:
    if not root.exists():
        return []
    # hidden folders are report folders being written (or left by a killed run): skipped
    return sorted(
        p.parent
        for p in root.rglob("stats.json")
        if (p.parent / "probes.csv").exists()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


st.title("Source reliance")
st.caption(
    "Does the model keep its own correct answer when a user or a document asserts a wrong "
    "one, adopt a correct correction, and tell the two apart? PAR+ / SDR+ with 95% "
    "question-bootstrap intervals; the behaviour type with its bootstrap share."
)
reports = page_settings().workspace / "reports"
if st.button("Run the simulated demo (about half a minute)"):
    try:
        with st.spinner("Probing the simulator…"):
            run_sources_demo(out_dir=reports / "sources-demo", bootstrap=1000)
    except DriftLensError as exc:
        show_plain(exc)


@st.cache_data(max_entries=16, show_spinner="Computing the statistics…")
def _stored_result(
    db_url: str, name: str, revision: tuple[int, int, str]
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Statistics of a stored run (recomputed only when its probes changed)."""
    with page_session() as session:
        return stored_run_result(name, session=session, bootstrap=1000, seed=0)


with page_session() as session:
    stored = source_run_lines(session=session)
folders = [
    p
    for p in _folders(reports)
    if json.loads((p / "stats.json").read_text()).get("meta", {}).get("threshold") is not None
]
if stored:
    st.caption("Stored runs (`driftlens sources run`; every probe in the database)")
    st.dataframe(pd.DataFrame([vars(r) for r in stored]), hide_index=True)
options: list[tuple[str, str]] = [("run", r.name) for r in stored] + [
    ("folder", str(p.relative_to(reports))) for p in folders
]
if not options:
    st.info("No source-reliance results yet: run the demo above or `driftlens sources run`.")
    st.stop()
kind, ref = st.selectbox(
    "Results",
    options,
    format_func=lambda o: f"stored run {o[1]}" if o[0] == "run" else f"report folder {o[1]}",
    index=0,
)
if kind == "run":
    line = next(r for r in stored if r.name == ref)
    result, table = _stored_result(
        page_settings().db_url, ref, (line.probes, line.failed, line.status)
    )
    st.text(
        f"{line.probes} probes stored ({line.unknown} unknown, {line.failed} failed); "
        f"status {line.status}. Statistics with 1,000 bootstrap replicates, seed 0."
    )
else:
    result = json.loads((reports / ref / "stats.json").read_text())
    table = read_sources_csv(reports / ref / "probes.csv")
if any(str(m).startswith("sim/") for m in result["models"]):
    st.warning("SIMULATED DATA — every answer comes from the built-in simulator.")

st.subheader("Source influence")
st.dataframe(influence_table(result), hide_index=True)
st.caption(
    "Odds ratios and shares are means over the tier × ordering regressions; the "
    "'no bare rows' columns refit them without the bare probes."
)
left, right = st.columns(2)
with left:
    st.subheader("Behaviour quadrant")
    st.pyplot(quadrant_figure(result))
with right:
    st.subheader("KL vs ΔNLL by scenario")
    fig = kl_figure(table)
    if fig is None:
        st.text("No answer distributions (choice-only run).")
    else:
        st.pyplot(fig)

for model, datasets in result["models"].items():
    for dataset, cell in datasets.items():
        st.subheader(f"{escape_markdown(model)} · {escape_markdown(dataset)}")
        st.dataframe(discrimination_table(cell), hide_index=True)
        for sentence in effect_lines(cell):
            st.text(sentence)
        st.dataframe(variant_table(cell), hide_index=True)
        instr = instruction_table(cell)
        if not instr.empty:
            st.caption("System-instruction variants")
            st.dataframe(instr, hide_index=True)

with st.expander("Probes (raw table)"):
    st.dataframe(pd.DataFrame(table), hide_index=True)
