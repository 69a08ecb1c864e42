"""Source reliance: own answer vs user vs document assertions (tables and figures).

Reads a run folder written by ``driftlens sources run`` / ``sources demo`` (``probes.csv`` +
``stats.json``) or runs the simulated demo. Model and dataset names come from files and
models: they are shown in dataframes, ``st.text`` or escaped Markdown only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from app.ui.db import page_settings
from app.ui.safe import escape_markdown, show_plain
from storage.errors import DriftLensError
from study.sources.analysis import read_sources_csv
from study.sources.demo import run_sources_demo
from study.sources.report import (
    discrimination_table,
    influence_table,
    instruction_table,
    kl_figure,
    quadrant_figure,
    variant_table,
)


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
if st.button("Run the simulated demo (seconds)"):
    try:
        with st.spinner("Probing the simulator…"):
            run_sources_demo(out_dir=reports / "sources-demo", bootstrap=1000)
    except DriftLensError as exc:
        show_plain(exc)

folders = [
    p
    for p in _folders(reports)
    if json.loads((p / "stats.json").read_text()).get("meta", {}).get("threshold") is not None
]
if not folders:
    st.info("No source-reliance results yet: run the demo above or `driftlens sources run`.")
    st.stop()
choice = st.selectbox(
    "Results", folders, format_func=lambda p: str(p.relative_to(reports)), index=0
)
result = json.loads((choice / "stats.json").read_text())
table = read_sources_csv(choice / "probes.csv")
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
        st.dataframe(variant_table(cell), hide_index=True)
        instr = instruction_table(cell)
        if not instr.empty:
            st.caption("System-instruction variants")
            st.dataframe(instr, hide_index=True)

with st.expander("Probes (raw table)"):
    st.dataframe(pd.DataFrame(table), hide_index=True)
