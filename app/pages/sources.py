"""Source reliance, end to end: set up a run, probe the model as a background job, read
its report (tables and figures), open one item's probe variants, push its human study,
download it all.

Thin over :mod:`study.sources.setup` (items, the ``sources run`` command a job runs, the
read-back) and :mod:`study.sources.report` (tables and figures). A stored run's statistics
come from its own report folder (written by the job); a run stored by the CLI without one
is analysed here (1,000 replicates, cached). Model, dataset and probe texts come from files
and models: they are shown in data frames, ``st.text`` or escaped Markdown only.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from app.ui.checked_input import FormCheck
from app.ui.db import page_session, page_settings
from app.ui.figure_image import show_figure
from app.ui.job_follow import follow_job
from app.ui.job_panel import demo_button, job_panel, start_job
from app.ui.model_picker import model_picker
from app.ui.page_stop import stop_with_info
from app.ui.safe import escape_markdown, show_plain
from app.ui.sample_or_upload import sample_or_upload
from app.ui.study_handoff import open_human_studies
from app.ui.table_downloads import folder_download, stats_download, table_downloads
from app.ui.url_state import url_open, url_select
from llm.specs import spec_simulated
from storage.errors import DriftLensError
from storage.repo.sources import claim_sets
from study.model_choices import check_model
from study.sources.report import (
    discrimination_table,
    effect_lines,
    influence_table,
    instruction_table,
    kl_figure,
    quadrant_figure,
    variant_table,
)
from study.sources.setup import (
    INSTRUCTION_NAMES,
    ITEM_SUFFIXES,
    VOCABULARY_NAMES,
    folder_records,
    item_probes,
    record_items,
    records_jsonl,
    report_folder,
    run_argv,
    save_items,
    sim_presets,
    stored_records,
)
from study.sources.store import source_run_lines, stored_run_result
from study.sources.table import read_sources_csv


def _folders(root: Path) -> list[Path]:
    """Report folders of runs not stored in the database (the demo's, older CLI runs)."""
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
ws = page_settings().workspace
reports = ws / "reports"

# ------------------------------------------------------------------ set up and run
with page_session() as session:
    stored = source_run_lines(session=session)
    sets = claim_sets(session=session)
with st.expander("Set up a run", expanded=not stored):
    model = model_picker("Model", sim_presets(), key="src-model", default="sim/src-paper")
    a, b = st.columns(2)
    form = FormCheck()
    run_name = form.run_name("Run name", "my-run", key="src-run-name", where=a)
    limit = form.number("Use the first N items (0: all)", low=0, high=1_000_000, value=0,
                        key="src-n", where=b)  # fmt: skip
    upload = sample_or_upload(
        "Items",
        "shipped sample",
        file_label="Items file (JSONL or CSV, as `driftlens sources items` reads)",
        suffixes=ITEM_SUFFIXES,
        radio_key="src-items-source",
        upload_key="src-upload",
    )
    c, d, e = st.columns(3)
    instructions = c.multiselect(
        "System-instruction variants",
        list(INSTRUCTION_NAMES),
        ["n"],
        format_func=lambda k: f"{k} — {INSTRUCTION_NAMES[k]}",
        key="src-instr",
    )
    tiers = d.multiselect("Assertion tiers", [1, 2], [1], key="src-tiers")
    vocabulary = e.selectbox("Assertion vocabulary", VOCABULARY_NAMES, key="src-vocab")
    claims = None
    if 2 in tiers:
        claims = st.selectbox("Tier-2 claim set", sorted(sets), key="src-claims") if sets else None
        if not sets:
            st.caption("No claim set stored yet (`driftlens sources claims`): tier 2 cannot run.")
    f, g, h = st.columns(3)
    logprobs = f.checkbox("Read log-probabilities", True, key="src-logprobs")
    prefill = g.checkbox("Assistant 'Answer:' prefill", True, key="src-prefill")
    bootstrap = form.number("Bootstrap replicates", low=200, high=100_000, value=1000,
                            key="src-B", where=h)  # fmt: skip
    st.caption("Every probe runs the 13 variants (bare first) in both orderings of two sources.")
    setup_panel = job_panel(kind="sources run", key="src-setup-jobs")
    if st.button(
        "Run (probe, read letters, analyse)",
        type="primary",
        key="src-start",
        disabled=setup_panel.busy is not None or not form.ok,
        help=form.why,
    ):
        try:
            checked = check_model(model, env=os.environ, presets=sim_presets())
            items = save_items(ws, run_name, upload.name, upload.getvalue()) if upload else None
            argv = run_argv(
                run_name,
                model=checked,
                items=items,
                out=report_folder(ws, run_name),
                limit=int(limit) or None,
                tiers=tiers,
                instructions=instructions,
                vocabulary=str(vocabulary),
                logprobs=logprobs,
                prefill=prefill,
                claims_set=claims,
                bootstrap=int(bootstrap),
            )
        except DriftLensError as exc:
            show_plain(exc)
        else:
            job = start_job(
                key="src-setup-jobs",
                kind="sources run",
                title=f"Source-reliance run {run_name!r}",
                argv=argv,
                scope={"run": run_name},
            )
            if job is not None:
                url_open("results", f"run:{run_name}")
                st.rerun()
    if setup_panel.finished is not None:
        st.rerun()

if demo_button(
    "Run the simulated demo",
    key="src-demo",
    kind="sources demo",
    title="Source-reliance demo",
    argv=["sources", "demo", "--out", str(reports / "sources-demo"), "--bootstrap", "1000"],
):
    url_open("results", "folder:sources-demo")
    st.rerun()

# ------------------------------------------------------------------ pick results
folders = [
    p
    for p in _folders(reports)
    if json.loads((p / "stats.json").read_text()).get("meta", {}).get("threshold") is not None
]
own = {report_folder(ws, r.name) for r in stored}
options = [f"run:{r.name}" for r in stored] + [
    f"folder:{p.relative_to(reports)}" for p in folders if p not in own
]
if stored:
    st.caption("Stored runs (every probe in the database)")
    st.dataframe(pd.DataFrame([vars(r) for r in stored]), hide_index=True)
# A run just started (or a reload of its page) is named before its job stored it.
follow_job(param="results", options=options, kind="sources run", key="src-follow",
           scope_of=lambda o: {"run": o[4:]} if o.startswith("run:") else None,
           label_of=lambda o: o.partition(":")[2])  # fmt: skip
if not options:
    stop_with_info(
        "No source-reliance results yet: set up a run above (the simulator works offline)."
    )
choice = str(
    url_select(
        "Results",
        options,
        param="results",
        what="run",
        format_func=lambda o: f"stored run {o[4:]}" if o.startswith("run:") else f"folder {o[7:]}",
    )
)
kind, _, ref = choice.partition(":")
run_panel = job_panel(kind="sources run", scope={"run": ref}, key="src-jobs")
if run_panel.finished is not None:
    st.rerun()


@st.cache_data(max_entries=16, show_spinner="Computing the statistics…")
def _stored_result(
    db_url: str, name: str, revision: tuple[int, int, str]
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Statistics of a stored run without a report folder (recomputed when its probes change)."""
    with page_session() as session:
        return stored_run_result(name, session=session, bootstrap=1000, seed=0)


# The probe records are cached as resources (one shared list, never changed by the page):
# as cached data every rerun unpickled a copy, 0.6 s for the demo's 6 MB probes.jsonl.
@st.cache_resource(max_entries=8, show_spinner=False)
def _stored_records(db_url: str, name: str, revision: tuple[int, int, str]) -> list[Any]:
    """A stored run's probe records (read again only when its probes change; read-only)."""
    with page_session() as session:
        return stored_records(name, session=session)


@st.cache_resource(max_entries=8, show_spinner=False)
def _folder_records(path: str, mtime: float) -> list[Any]:
    """A report folder's ``probes.jsonl`` records (read again when the file changes; read-only)."""
    return folder_records(Path(path))


@st.cache_data(max_entries=8, show_spinner=False)
def _folder_result(path: str, revision: tuple[int, int]) -> tuple[dict[str, Any], pd.DataFrame]:
    """A report folder's statistics and probe table (read again when either file changes)."""
    return json.loads((Path(path) / "stats.json").read_text()), read_sources_csv(
        Path(path) / "probes.csv"
    )


@st.cache_data(max_entries=8, show_spinner=False)
def _figure_pngs(
    key: tuple[Any, ...], _result: dict[str, Any], _table: pd.DataFrame
) -> tuple[bytes, bytes | None]:
    """The quadrant and KL figures as PNG, drawn once per ``key`` (the results' revision):
    a rerun used to draw and encode both again (about 1 s on 2 cores). ``None``: no KL."""

    def png(fig: Any) -> bytes:
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=110)  # as the report folder's figures
        return out.getvalue()

    kl = kl_figure(_table)
    return png(quadrant_figure(_result)), None if kl is None else png(kl)


folder = report_folder(ws, ref) if kind == "run" else reports / ref
has_folder = (folder / "stats.json").is_file() and (folder / "probes.csv").is_file()
# Reading the probes and the statistics takes seconds the first time (a 6 MB probes.jsonl
# on the demo): say so at once, under the picker, instead of a silent page.
with st.spinner("Loading the results…", show_time=True):
    if kind == "run":
        line = next(r for r in stored if r.name == ref)
        st.text(
            f"{line.probes} probes stored ({line.unknown} unknown, {line.failed} failed); "
            f"status {line.status}."
        )
        records = _stored_records(
            page_settings().db_url, ref, (line.probes, line.failed, line.status)
        )
    if has_folder:
        revision = (
            (folder / "stats.json").stat().st_mtime_ns,
            (folder / "probes.csv").stat().st_mtime_ns,
        )
        result, table = _folder_result(str(folder), revision)
        figure_key: tuple[Any, ...] = ("folder", str(folder), revision)
        if kind == "folder":
            jsonl = folder / "probes.jsonl"
            records = _folder_records(str(folder), jsonl.stat().st_mtime if jsonl.exists() else 0.0)
    elif run_panel.busy is not None or not line.probes:
        stop_with_info("No statistics yet: the run is still probing.")
    else:
        try:
            result, table = _stored_result(
                page_settings().db_url, ref, (line.probes, line.failed, line.status)
            )
        except DriftLensError as exc:
            show_plain(exc)
            st.stop()
        figure_key = ("run", page_settings().db_url, ref, (line.probes, line.failed, line.status))
        st.caption("No report folder for this run: statistics with 1,000 replicates, seed 0.")

# ------------------------------------------------------------------ results
if any(spec_simulated(str(m)) for m in result["models"]):
    st.warning("SIMULATED DATA — every answer comes from the built-in simulator.")
st.subheader("Source influence")
st.dataframe(influence_table(result), hide_index=True)
st.caption(
    "Odds ratios and shares are means over the tier × ordering regressions; the "
    "'no bare rows' columns refit them without the bare probes."
)
left, right = st.columns(2)
# A report folder holds both figures as written by its job (no KL file: a choice-only run);
# else they are drawn here, once per revision of the results.
if has_folder and (folder / "quadrant.png").is_file():
    kl_png = folder / "kl_vs_dnll.png"
    quadrant: Path | bytes = folder / "quadrant.png"
    kl: Path | bytes | None = kl_png if kl_png.is_file() else None
else:
    with st.spinner("Drawing the figures…", show_time=True):
        quadrant, kl = _figure_pngs(figure_key, result, table)


def _show(figure: Path | bytes) -> None:
    """A report folder's PNG file (scaled once per file version) or drawn PNG bytes."""
    if isinstance(figure, Path):
        show_figure(figure)
    else:
        st.image(figure)


with left:
    st.subheader("Behaviour quadrant")
    _show(quadrant)
with right:
    st.subheader("KL vs ΔNLL by scenario")
    if kl is None:
        st.text("No answer distributions (choice-only run).")
    else:
        _show(kl)

for model_name, datasets in result["models"].items():
    for dataset, cell in datasets.items():
        st.subheader(f"{escape_markdown(model_name)} · {escape_markdown(dataset)}")
        st.dataframe(discrimination_table(cell), hide_index=True)
        for sentence in effect_lines(cell):
            st.text(sentence)
        st.dataframe(variant_table(cell), hide_index=True)
        instr = instruction_table(cell)
        if not instr.empty:
            st.caption("System-instruction variants")
            st.dataframe(instr, hide_index=True)

# ------------------------------------------------------------------ one item
st.subheader("One item's probe variants")
item_ids = record_items(records)
if not item_ids:
    st.info("This folder holds no probes.jsonl: the variants of one item cannot be shown.")
else:
    item = url_select("Item", item_ids, param="item", what="item")
    st.dataframe(item_probes(records, str(item)), hide_index=True)
    st.caption(
        "P(letter): the answer distribution read at the answer position; top logprobs: "
        "the five most likely first tokens with their log-probabilities."
    )

# ------------------------------------------------------------------ human study
st.subheader("Human study")
if sets:
    claim_set = st.selectbox("Claim set", sorted(sets), key="src-h-set")
    if st.button("Check the tier-2 claims (claim_check)", key="src-h-claims"):
        open_human_studies("claim_check", [f"claim_set={claim_set}"])
else:
    st.caption(
        "The tier-2 claim check needs a stored claim set (`driftlens sources claims`); "
        "tier-1 assertions are templates and need no human check."
    )

# ------------------------------------------------------------------ downloads
st.subheader("Downloads")
table_downloads("Probes", lambda: table, file_stem=f"{folder.name}-probes", key="src-dl-table")
d1, d2, d3 = st.columns(3)
d1.download_button(
    "Probes with logprobs (.jsonl)",
    data=lambda: records_jsonl(records),
    # not "-probes.jsonl": the Probes table's own JSONL button above saves under that name
    file_name=f"{folder.name}-probes-logprobs.jsonl",
    mime="application/x-ndjson",
    key="src-dl-jsonl",
    on_click="ignore",  # a download needs no rerun of the page
)
with d2:
    stats_download(
        json.dumps(result, indent=2, allow_nan=False) + "\n",
        file_stem=folder.name,
        key="src-dl-stats",
    )
if has_folder:
    with d3:
        folder_download(
            "Report folder (.zip)", folder, file_name=f"{folder.name}.zip", key="src-dl-zip"
        )
