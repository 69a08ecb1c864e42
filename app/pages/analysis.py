"""Analysis: run the drift analysis of a run, or show the latest stored one.

Everything shown that came from a model, a user or a catalog (questions, steps, answers,
memory lines, run, model and condition names) is rendered through dataframes, ``st.text``
or :func:`app.ui.safe.escape_markdown`, never as live Markdown or HTML.
"""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st
from sqlmodel import col, select

from app.ui.db import page_session, page_settings
from app.ui.safe import escape_markdown
from ontology.versions import document, get_version, seed_ontologies
from storage.errors import DriftLensError
from storage.models import GenerationRun, LabelerSpec, OntologyVersion
from storage.repo.analyses import list_analyses
from storage.repo.runs import list_runs
from study.reasoning.analysis import analyze_run
from study.reasoning.config import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from study.reasoning.stored import (
    StoredAnalysis,
    analysis_examples,
    get_analysis,
    latest_analysis,
)
from study.report.data import CLASS_ORDER, ExamplePair
from study.report.figures import agreement_plot, forest_plot, tier_plot

# Streamlit's coloured-text names, one per ontology root in document order.
_ROOT_COLOURS = ("blue", "green", "red", "orange", "violet", "gray")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "run"


def _verdict(value: object) -> str:
    if value is True:
        return "pass"
    if value is False:
        return "FAIL"
    return "not run"


def _show_steps(example: ExamplePair, which: str, roots: list[str]) -> None:
    steps = example.baseline if which == "baseline" else example.perturbed
    if not steps:
        st.text("No parsed steps.")
        return
    for s in steps:
        colour = (
            _ROOT_COLOURS[roots.index(s.root) % len(_ROOT_COLOURS)] if s.root in roots else "gray"
        )
        label = escape_markdown(f"{s.root} · {s.leaf}")
        st.markdown(f"{s.index + 1}\\. :{colour}-background[{label}] {escape_markdown(s.text)}")


@st.cache_data(show_spinner="Loading example pairs…", max_entries=16)
def _examples(db_url: str, analysis_id: int) -> tuple[tuple[ExamplePair, ...], list[str]]:
    """Example pairs and ontology roots of one analysis (cached: they never change)."""
    del db_url  # part of the cache key only: ids repeat across workspaces
    with page_session() as session:
        stored = get_analysis(analysis_id, session=session)
        examples = analysis_examples(stored, session=session)
        version = get_version(stored.config.ontology_version, session=session)
        roots = [r.name for r in document(version).roots]
    return examples, roots


def _show(stored: StoredAnalysis) -> None:
    prov = stored.provenance
    if prov.simulated:
        st.error("**SIMULATED DATA** — this run's responses come from the drift simulator.")
    st.text(
        f"Analysis {stored.id} · {stored.created_at:%Y-%m-%d %H:%M} UTC · "
        f"B = {stored.config.bootstrap} · seed {stored.config.seed} · "
        f"ontology {stored.config.ontology_version} · labeler {stored.config.labeler} · "
        f"core {stored.implementation}"
    )
    tables = stored.tables

    st.subheader("Validity checks")
    validity = tables.validity.assign(result=tables.validity["passed"].map(_verdict))
    st.dataframe(
        validity[["model", "metric", "check", "result", "detail", "failing"]],
        hide_index=True,
        width="stretch",
    )

    st.subheader("Drift tiers")
    st.dataframe(tables.tiers, hide_index=True, width="stretch")

    html_file = stored.files.get("report_html")
    figure_dir = html_file.parent / "figures" if html_file is not None else None
    tab_forest, tab_tiers, tab_agree = st.tabs(["Forest plot", "Tiers", "DTW vs SRI"])
    for tab, name in ((tab_forest, "forest"), (tab_tiers, "tiers"), (tab_agree, "agreement")):
        with tab:
            png = figure_dir / f"{name}.png" if figure_dir is not None else None
            if png is not None and png.is_file():
                st.image(str(png))
            else:
                # report folder moved or deleted: draw from the stored statistics instead
                fig = {
                    "forest": lambda: forest_plot(tables.conditions),
                    "tiers": lambda: tier_plot(tables.tiers, tables.conditions),
                    "agreement": lambda: agreement_plot(tables.condition_means, tables.agreement),
                }[name]()
                st.pyplot(fig)

    st.subheader("Conditions")
    metrics = sorted(tables.conditions["metric"].unique()) if len(tables.conditions) else []
    metric = st.radio("Metric", metrics, horizontal=True) if metrics else None
    conditions = tables.conditions[tables.conditions["metric"] == metric]
    st.dataframe(conditions, hide_index=True, width="stretch")

    tab_letters, tab_cal, tab_agree2, tab_mm = st.tabs(
        ["Letters", "Calibration", "Agreement", "Mixed model"]
    )
    with tab_letters:
        st.dataframe(tables.letters, hide_index=True, width="stretch")
    with tab_cal:
        st.dataframe(tables.calibration_summary, hide_index=True, width="stretch")
        st.dataframe(tables.calibration, hide_index=True, width="stretch")
    with tab_agree2:
        st.dataframe(tables.agreement, hide_index=True, width="stretch")
    with tab_mm:
        st.dataframe(tables.mixed_model, hide_index=True, width="stretch")

    st.subheader("Example response pairs")
    try:
        examples, roots = _examples(page_settings().db_url, stored.id)
    except DriftLensError as exc:
        st.warning(escape_markdown(str(exc)))
        examples, roots = (), []
    for ex in examples:
        with st.expander(f"{ex.condition_class} · {ex.condition} · DTW {ex.dtw:.3f}"):
            st.caption("Question")
            st.text(ex.question)
            st.caption("Memory line")
            st.text(repr(ex.memory) if not ex.memory.strip() else ex.memory)
            left, right = st.columns(2)
            with left:
                st.markdown("**Baseline (no memory)**")
                _show_steps(ex, "baseline", roots)
                st.text(f"Answer: {ex.baseline_answer}")
            with right:
                st.markdown("**With memory**")
                _show_steps(ex, "perturbed", roots)
                st.text(f"Answer: {ex.perturbed_answer}")

    if html_file is not None and html_file.is_file():
        st.download_button(
            "Download report.html",
            data=html_file.read_bytes(),
            file_name="report.html",
            mime="text/html",
        )
        st.text(f"Report folder: {html_file.parent}")
    else:
        st.info("The report folder of this analysis is no longer on disk; run it again.")


st.title("Analysis")
st.caption(
    "Drift of every response against its question's baseline (DTW, SRI), effect sizes with "
    "cluster-bootstrap CIs against the noise floor, calibration and validity (SPEC §6–§8)."
)

with page_session() as session:
    seed_ontologies(session=session)
    runs = [r.name for r in list_runs(session=session)]
    labelers = sorted({s.name for s in session.exec(select(LabelerSpec)).all() if s.name})
    versions = [
        f"{v.name}@{v.version}"
        for v in session.exec(
            select(OntologyVersion).order_by(
                col(OntologyVersion.name), col(OntologyVersion.version).desc()
            )
        ).all()
    ]

if not runs:
    st.info("No generation runs yet: launch one on the Runs page (Launch a run).")
    st.stop()

# Open on the newest stored analysis: rounds add labelers and versions, and the first in
# alphabetical order is rarely the one that was analysed.
with page_session() as session:
    newest = next(iter(list_analyses(session=session)), None)
    newest_run = session.get(GenerationRun, newest.run_id) if newest is not None else None
    newest_config = dict(newest.config) if newest is not None else {}
params = st.query_params
wanted_run = params.get("run") or (newest_run.name if newest_run is not None else None)
wanted_labeler = params.get("labeler") or newest_config.get("labeler")
wanted_version = params.get("version") or newest_config.get("ontology_version")
labeler_options = labelers or ["keywords"]
left, right = st.columns(2)
run_name = left.selectbox("Run", runs, index=runs.index(wanted_run) if wanted_run in runs else 0)
labeler = right.selectbox(
    "Labeler",
    labeler_options,
    index=labeler_options.index(wanted_labeler) if wanted_labeler in labeler_options else 0,
)
default_version = next((i for i, v in enumerate(versions) if v.startswith("driftlens@")), 0)
if wanted_version in versions:
    default_version = versions.index(wanted_version)
version = left.selectbox("Ontology version", versions, index=default_version)
bootstrap = int(
    right.number_input("Bootstrap replicates B", 200, 100_000, DEFAULT_BOOTSTRAP, step=1_000)
)
seed = int(left.number_input("Seed", value=DEFAULT_SEED, step=1))
label_first = right.checkbox("Label unlabeled responses first")
others = st.multiselect(
    "Add runs of other models (shown side by side)", [r for r in runs if r != run_name]
)

if st.button("Run analysis", type="primary"):
    chosen = [run_name, *others]
    out_dir = (
        page_settings().workspace
        / "reports"
        / f"{'+'.join(_slug(r) for r in chosen)}-{_slug(labeler)}"
    )
    try:
        with st.spinner("Computing drift and statistics…"), page_session() as session:
            result = analyze_run(
                chosen,
                labeler,
                session=session,
                out_dir=out_dir,
                bootstrap=bootstrap,
                seed=seed,
                ontology_version=version,
                label_first=label_first,
            )
    except (DriftLensError, ValueError) as exc:
        st.error(escape_markdown(str(exc)))
    else:
        st.success(f"Analysis {result.analysis_id} stored.")
        st.text(f"Report: {Path(result.files['report_html']).resolve()}")

with page_session() as session:
    stored = latest_analysis(run_name, session=session, labeler_spec=labeler)

if stored is None:
    st.info("No stored analysis for this run and labeler yet: press *Run analysis*.")
else:
    _show(stored)

# Keep the class order visible next to the tables.
st.caption(
    "Classes: "
    + " · ".join(CLASS_ORDER)
    + ". Conditions are perturbation categories; questions are the bootstrap cluster."
)
