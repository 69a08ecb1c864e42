"""Analysis: the stored analyses (newest first, linkable), a new analysis, and downloads.

The URL names the analysis shown (``?analysis=ID``, or ``?run=&labeler=&version=`` for the
newest matching one), so a view can be linked. The controls of a new analysis sit apart,
in their own expander: they start a computation and never filter what is shown.

Everything shown that came from a model, a user or a catalog (questions, steps, answers,
memory lines, run, model and condition names) is rendered through dataframes, ``st.text``
or :func:`app.ui.safe.escape_markdown`, never as live Markdown or HTML.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st
from sqlmodel import col, select

from app.ui.calibration_panel import calibration_link
from app.ui.checked_input import FormCheck
from app.ui.db import page_session, page_settings
from app.ui.figure_image import show_figure
from app.ui.job_panel import job_panel, start_job
from app.ui.page_stop import stop_with_info
from app.ui.safe import escape_markdown, show_plain
from app.ui.self_judging import self_judging_argv, self_judging_checkbox
from app.ui.table_downloads import folder_download
from app.ui.url_state import unknown_line, url_open, url_select
from driftlens_core.bootstrap import MIN_BOOTSTRAP
from ontology.versions import document, get_version, seed_ontologies, version_label
from storage.errors import DriftLensError
from storage.models import LabelerSpec, OntologyVersion
from storage.repo.judges import run_judges
from study.reasoning.analysis_index import AnalysisEntry, list_analysis_entries
from study.reasoning.benchmark_export import TIER_SELECTIONS, select_questions
from study.reasoning.config import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from study.reasoning.downloads import (
    benchmark_zip,
    preferences_jsonl,
    responses_jsonl,
)
from study.reasoning.report.data import CLASS_ORDER, ExamplePair
from study.reasoning.run_choices import labelled_with, reasoning_runs
from study.reasoning.stored import (
    ExamplePage,
    StoredAnalysis,
    chosen_examples,
    example_page,
    get_analysis,
)

# Streamlit's coloured-text names, one per ontology root in document order.
_ROOT_COLOURS = ("blue", "green", "red", "orange", "violet", "gray")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "run"


def _verdict(value: object) -> str:
    if value is True:
        return "pass"
    if value is False:
        return "FAIL"
    return "open"  # inconclusive or not run: the detail says which


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


@st.cache_data(show_spinner="Finding the example pairs…", max_entries=16)
def _example_records(db_url: str, analysis_id: int) -> list[dict[str, Any]]:
    """Which example pairs an analysis shows (cached: they never change)."""
    del db_url  # part of the cache key only: ids repeat across workspaces
    with page_session() as session:
        return chosen_examples(get_analysis(analysis_id, session=session), session=session)


@st.cache_data(show_spinner="Loading example pairs…", max_entries=64)
def _example_page(
    db_url: str, analysis_id: int, offset: int, limit: int
) -> tuple[ExamplePage, list[str]]:
    """One page of example pairs and the ontology roots (only that page's rows are read)."""
    records = _example_records(db_url, analysis_id)
    with page_session() as session:
        stored = get_analysis(analysis_id, session=session)
        page = example_page(stored, session=session, offset=offset, limit=limit, chosen=records)
        version = get_version(stored.config.ontology_version, session=session)
        roots = [r.name for r in document(version).roots]
    return page, roots


# What the statistics columns mean (SPEC §7–§8), shown as column help and in a legend.
COLUMN_HELP: dict[str, str] = {
    "d_rel": (
        "Standardised drift: (mean drift of the condition − mean drift under pragmatic noise)"
        " / SD under noise. 0 = at the noise floor; CI from a cluster bootstrap over questions."
    ),
    "letters": (
        "Compact letter display: conditions sharing a letter do not differ "
        "(pairwise Welch t-tests, BH-corrected, α = 0.05)."
    ),
    "mdd": (
        "Minimum detectable drift (d_rel units): the smallest effect this design detects "
        "with 80 % power at the 5 % level; a smaller true drift may go unseen."
    ),
    "mdd_raw": "Minimum detectable drift in raw drift units (DTW or SRI).",
    "equivalence_bound": (
        "Smallest symmetric range around 0 holding the 90 % CI: when nothing is detected, "
        "drift is at most this large."
    ),
}


def _column_config(frame: pd.DataFrame) -> dict[str, Any]:
    return {
        name: st.column_config.Column(name, help=text)
        for name, text in COLUMN_HELP.items()
        if name in frame.columns
    }


def _table(frame: pd.DataFrame) -> None:
    st.dataframe(frame, hide_index=True, width="stretch", column_config=_column_config(frame))


def _simulated_mark(simulated: bool) -> None:
    if simulated:
        st.caption(":red[**Simulated**] — drawn from drift-simulator responses, not a model's.")


def _calibrated(stored: StoredAnalysis) -> None:
    """Drift calibrated to a pulled label_check slice, beside the model-only drift."""
    from study.reasoning.calibrated import CalibratedDrift, calibrated_frame, calibrated_notes

    block = stored.stats.get("calibrated")
    if not isinstance(block, dict):
        return
    cal = CalibratedDrift.from_dict(block)
    st.subheader("Calibrated to people")
    # st.text shows the sentences as plain text: notes name ontology versions and conditions
    for line in calibrated_notes(cal):
        st.text(line)
    st.dataframe(calibrated_frame(cal), hide_index=True, width="stretch")


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
    _table(tables.tiers)
    _calibrated(stored)

    html_file = stored.files.get("report_html")
    figure_dir = html_file.parent / "figures" if html_file is not None else None
    # Lazy tabs here and below (issue #20, the first render): only the open tab's figure or
    # tables are built and sent; choosing another tab reruns the page to draw it.
    tab_forest, tab_tiers, tab_agree = st.tabs(
        ["Forest plot", "Tiers", "DTW vs SRI"], key="figure-tab", on_change="rerun"
    )
    for tab, name in ((tab_forest, "forest"), (tab_tiers, "tiers"), (tab_agree, "agreement")):
        if not tab.open:
            continue
        with tab:
            _simulated_mark(prov.simulated)
            png = figure_dir / f"{name}.png" if figure_dir is not None else None
            if png is not None and png.is_file():
                show_figure(png)
            else:
                # report folder moved or deleted: draw from the stored statistics instead
                # (matplotlib is imported only here: a report's own PNGs need none of it)
                from study.reasoning.report.figures import agreement_plot, forest_plot, tier_plot

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
    _table(conditions)
    with st.expander("What d_rel, letters and MDD mean"):
        for name in ("d_rel", "letters", "mdd", "equivalence_bound"):
            st.text(f"{name}: {COLUMN_HELP[name]}")

    tab_letters, tab_cal, tab_agree2, tab_mm = st.tabs(
        ["Letters", "Calibration", "Agreement", "Mixed model"], key="table-tab", on_change="rerun"
    )
    if tab_letters.open:
        with tab_letters:
            _table(tables.letters)
    if tab_cal.open:
        with tab_cal:
            _table(tables.calibration_summary)
            _table(tables.calibration)
    if tab_agree2.open:
        with tab_agree2:
            st.dataframe(tables.agreement, hide_index=True, width="stretch")
    if tab_mm.open:
        with tab_mm:
            st.dataframe(tables.mixed_model, hide_index=True, width="stretch")

    st.subheader("Example response pairs")
    try:
        _examples_section(stored.id)
    except DriftLensError as exc:
        show_plain(exc, kind="warning")

    _downloads(stored)


def _examples_section(analysis_id: int) -> None:
    """The example pairs one page at a time: only the shown pairs' rows are read."""
    db_url = page_settings().db_url
    records = _example_records(db_url, analysis_id)
    if not records:
        return
    size_col, page_col = st.columns(2)
    page_size = int(size_col.selectbox("Pairs per page", (5, 10, 25), index=1))
    n_pages = max(1, -(-len(records) // page_size))
    page_no = int(
        page_col.number_input(
            f"Example page (of {n_pages:,})", min_value=1, max_value=n_pages, value=1
        )
    )
    page, roots = _example_page(db_url, analysis_id, (page_no - 1) * page_size, page_size)
    first = page.offset + 1 if page.pairs else 0
    st.caption(f"Pairs {first:,}–{page.offset + len(page.pairs):,} of {page.total:,}")
    for n, ex in enumerate(page.pairs, start=page.offset):
        _show_example(ex, roots, key=f"pair-{analysis_id}-{n}")


def _show_example(ex: ExamplePair, roots: list[str], *, key: str) -> None:
    """One pair in an expander whose steps are built only while it is open (issue #20)."""
    with st.expander(
        f"{ex.condition_class} · {ex.condition} · DTW {ex.dtw:.3f}", key=key, on_change="rerun"
    ) as box:
        if not box.open:
            return
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


def _downloads(stored: StoredAnalysis) -> None:
    """Browser downloads of this analysis's report and of the data behind it."""
    st.subheader("Downloads")
    html_file = stored.files.get("report_html")
    folder = html_file.parent if html_file is not None else stored.out_dir
    left, mid, right = st.columns(3)
    if folder is not None and folder.is_dir():
        with left:
            folder_download(
                "Report folder (.zip)", folder, file_name=f"{folder.name}.zip", key="dl_report_zip"
            )
        if html_file is not None and html_file.is_file():
            mid.download_button(
                "Download report.html",
                data=html_file.read_bytes,  # read on the click, not on every run (1.4 MB)
                file_name="report.html",
                mime="text/html",
                key="dl_report_html",
                on_click="ignore",  # a download needs no rerun of the page
            )
        st.text(f"Report folder: {folder}")
    else:
        left.button(
            "Report folder (.zip)",
            disabled=True,
            key="dl_report_zip_off",
            help="The report folder of this analysis is no longer on disk.",
        )
        st.info("The report folder of this analysis is no longer on disk; run it again.")

    runs = list(stored.config.runs) or [stored.config.run]
    run = right.selectbox("Run to export", runs, key="dl_run") if len(runs) > 1 else runs[0]
    right.download_button(
        f"Responses of {run} (.jsonl)",
        data=_deferred(responses_jsonl, run),
        file_name=f"{_slug(run)}-responses.jsonl",
        mime="application/x-ndjson",
        key="dl_responses",
        on_click="ignore",  # a download needs no rerun of the page
    )

    with page_session() as session:
        judges = run_judges(run, session=session)
    pref_left, pref_right = st.columns(2)
    if judges:
        judge = pref_left.selectbox("Judge of the preference pairs", judges, key="dl_judge")
        pref_right.download_button(
            "Preference pairs (.jsonl)",
            data=_deferred(preferences_jsonl, run, judge),
            file_name=f"{_slug(run)}-preferences.jsonl",
            mime="application/x-ndjson",
            key="dl_preferences",
            on_click="ignore",  # a download needs no rerun of the page
        )
    else:
        pref_right.button(
            "Preference pairs (.jsonl)",
            disabled=True,
            key="dl_preferences_off",
            help=f"No judge has scored run {run} yet: pairs need judge scores.",
        )
        pref_left.caption(f"Preference pairs need judge scores; no judge has scored run {run} yet.")
    if judges and st.toggle(
        f"The judge's rates of {run} calibrated to people", key="dl_judge_cal",
        help="Helpfulness, distraction and acknowledgement beside their PPI++ estimates from "
        "the pulled helpfulness / distraction / acknowledgement studies (docs/calibration.md).",
    ):  # fmt: skip
        from study.reasoning.calibrated_judges import calibrated_judge_rates, calibrated_lines

        with page_session() as session:
            rates, notes = calibrated_judge_rates(run, judge, session=session, bootstrap=1000)
        for line in calibrated_lines(rates):
            show_plain(line, kind="info")
        for note in notes:
            show_plain(f"Calibration: {note}.", kind="warning")
    link_left, link_right = st.columns(2)
    with link_left:
        calibration_link("helpfulness")
    with link_right:
        calibration_link("label_check")

    bench_left, bench_right = st.columns(2)
    tier = bench_left.selectbox(
        "Benchmark tier", TIER_SELECTIONS, key="dl_tier", help="core ⊂ relaxed ⊂ all questions"
    )
    with page_session() as session:
        count = len(select_questions(tier, session=session))
    if count:
        bench_right.download_button(
            f"Benchmark, {tier} ({count} questions, .zip)",
            data=_deferred(benchmark_zip, tier),
            file_name=f"benchmark-{tier}.zip",
            mime="application/zip",
            key="dl_benchmark",
            on_click="ignore",  # a download needs no rerun of the page
        )
    else:
        reason = f"No {tier} questions yet (tiers come from human verification)."
        bench_right.button(
            f"Benchmark, {tier} (.zip)", disabled=True, key="dl_benchmark_off", help=reason
        )
        bench_left.caption(reason)


def _deferred(export: Callable[..., bytes], *args: str) -> Callable[[], bytes]:
    """A download's content, built in its own session only when the button is clicked."""

    def build() -> bytes:
        with page_session() as session:
            return export(*args, session=session)

    return build


def _entry_label(entry: AnalysisEntry) -> str:
    sim = " · simulated" if entry.simulated else ""
    return (
        f"#{entry.id} · {', '.join(entry.runs)} · {entry.labeler} · {entry.ontology_version} · "
        f"B = {entry.bootstrap} · {entry.created_at:%Y-%m-%d %H:%M}{sim}"
    )


def _filtered(entries: list[AnalysisEntry]) -> AnalysisEntry:
    """The newest analysis matching ``?run=&labeler=&version=`` (else the newest of all).

    What opens when the URL names no ``?analysis=`` (or one that does not exist).
    """
    params = st.query_params
    run, labeler, version = params.get("run"), params.get("labeler"), params.get("version")
    if run or labeler or version:
        for e in entries:
            if (
                (not run or run in e.runs)
                and (not labeler or labeler == e.labeler)
                and (not version or version == e.ontology_version)
            ):
                return e
        if "analysis" not in params:  # a link by run/labeler/version that matches nothing
            wanted = ", ".join(
                f"{k}={v}"
                for k, v in (("run", run), ("labeler", labeler), ("version", version))
                if v
            )
            st.caption(unknown_line("analysis", wanted))
    return entries[0]


def _link(entry: AnalysisEntry) -> None:
    """Keep the URL on the shown analysis, so the address bar is a link to this view."""
    wanted = {  # ``?analysis=`` itself is url_select's
        "run": entry.run,
        "labeler": entry.labeler,
        "version": entry.ontology_version,
    }
    if {k: st.query_params.get(k) for k in wanted} != wanted:
        st.query_params.update(wanted)


st.title("Analysis")
st.caption(
    "Drift of every response against its question's baseline (DTW, SRI), effect sizes with "
    "cluster-bootstrap CIs against the noise floor, calibration and validity (SPEC §6–§8)."
)

with page_session() as session:
    seed_ontologies(session=session)
    # Reasoning-drift runs only: the memory-conflict runs have no steps to analyse.
    runs = reasoning_runs(session=session)
    main_version = version_label(get_version("driftlens", session=session))
    labelers = sorted({s.name for s in session.exec(select(LabelerSpec)).all() if s.name})
    versions = [
        f"{v.name}@{v.version}"
        for v in session.exec(
            select(OntologyVersion).order_by(
                col(OntologyVersion.name), col(OntologyVersion.version).desc()
            )
        ).all()
    ]
    entries = list_analysis_entries(session=session)

if not runs:
    stop_with_info("No generation runs yet: launch one on the Runs page (Launch a run).")

shown: AnalysisEntry | None = None
if entries:
    st.subheader("Stored analyses")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "analysis": e.id,
                    "run": ", ".join(e.runs),
                    "labeler": e.labeler,
                    "ontology version": e.ontology_version,
                    "B": e.bootstrap,
                    "date (UTC)": f"{e.created_at:%Y-%m-%d %H:%M}",
                    "simulated": e.simulated,
                }
                for e in entries
            ]
        ),
        hide_index=True,
        width="stretch",
    )
    by_id = {e.id: e for e in entries}
    # ``?analysis=ID`` opens that one (an unknown id says so); a new analysis opens itself.
    picked = url_select(
        "Show analysis",
        list(by_id),
        param="analysis",
        default=_filtered(entries).id,
        format_func=lambda i: _entry_label(by_id[i]),
        key="shown_analysis",
        help="The newest opens by default; the address bar links to the one shown.",
    )
    shown = by_id[picked] if picked in by_id else entries[0]
    _link(shown)

# ---------------------------------------------------------------- new analysis
# Set apart from what is shown: these controls start a new computation, they do not
# filter the analysis above.
# Running analyses show above the expander (open or not): a reload finds them here, and
# the analysis a finished one stored opens.
# One that finishes while the page is open opens (a page opened later shows the newest).
analysis_jobs = job_panel(kind="analyze", key="analysis-new")
if analysis_jobs.finished is not None and (analysis_jobs.finished.result or {}).get("analysis"):
    # Open the new analysis (its link) on the rerun.
    new_id = int(analysis_jobs.finished.result["analysis"])  # type: ignore[index]
    st.query_params.clear()
    url_open("analysis", new_id)
    st.session_state["analysis_stored"] = new_id
    st.rerun()
if "analysis_stored" in st.session_state:  # outside the expander: seen when it is closed
    st.success(f"Analysis {st.session_state.pop('analysis_stored')} stored and shown below.")
# Lazy: its widgets and the labelled-with query run only while it is open (issue #20).
with st.expander(
    "New analysis",
    expanded=not entries,
    icon=":material/add_chart:",
    key="new-analysis",
    on_change="rerun",
) as new_box:
    if new_box.open:
        st.caption(
            "Computes and stores a new analysis; it does not change the analysis shown. "
            "Defaults follow the analysis shown."
        )
        labeler_options = labelers or ["keywords"]

        def _index(options: list[str], wanted: str | None, default: int = 0) -> int:
            return options.index(wanted) if wanted in options else default

        left, right = st.columns(2)
        run_name = left.selectbox(
            "Run", runs, index=_index(runs, shown.run if shown else None), key="new_run"
        )
        labeler = right.selectbox(
            "Labeler",
            labeler_options,
            index=_index(labeler_options, shown.labeler if shown else None),
            key="new_labeler",
        )
        # The version the run was labeled with by this labeler (the shown analysis's when that
        # is one of them), else the main line's newest: a run labeled under driftlens@3 opens
        # on @3, not on the version of whatever analysis happens to be shown.
        with page_session() as session:
            labelled = [v for who, v in labelled_with(run_name, session=session) if who == labeler]
        wanted_version = (
            shown.ontology_version
            if shown and shown.ontology_version in labelled
            else labelled[0]
            if labelled
            else main_version
        )
        version = left.selectbox(
            "Ontology version",
            versions,
            index=_index(versions, wanted_version),
            key=f"new_version::{run_name}::{labeler}",  # the default follows run and labeler
            help="Defaults to the version this run was labeled with by this labeler.",
        )
        form = FormCheck()
        bootstrap = form.number("Bootstrap replicates B", low=MIN_BOOTSTRAP, high=100_000,
                                value=DEFAULT_BOOTSTRAP, step=1_000, key="new_bootstrap",
                                where=right)  # fmt: skip
        seed = form.number("Seed", low=0, high=2**32 - 1, value=DEFAULT_SEED, key="new_seed",
                           where=left)  # fmt: skip
        label_first = right.checkbox("Label unlabeled responses first", key="new_label_first")
        # Only labeling grades anything here: the box matters with "Label ... first".
        allow_self = label_first and self_judging_checkbox(key="new_self_judging", where=right)
        others = st.multiselect(
            "Add runs of other models (shown side by side)",
            [r for r in runs if r != run_name],
            key="new_others",
        )
        if st.button(
            "Run analysis",
            type="primary",
            key="new_run_button",
            disabled=analysis_jobs.busy is not None or not form.ok,
            help=analysis_jobs.busy or form.why,
        ):
            chosen = [run_name, *others]
            argv = ["analyze", *[a for r in chosen for a in ("--run", r)], "--labeler", labeler]
            argv += ["--bootstrap", str(bootstrap), "--seed", str(seed)]
            argv += ["--ontology-version", version] + (["--label"] if label_first else [])
            argv = self_judging_argv(argv, allow_self)
            # A background process with its own report folder: a reload shows it running and
            # then opens the analysis it stored.
            title = f"Analysis of {', '.join(chosen)} · {labeler} · {version} · B = {bootstrap:,}"
            if start_job(
                key="analysis-new",
                kind="analyze",
                title=title,
                argv=argv,
                scope={"run": run_name},
            ):
                st.rerun()


if shown is None:
    st.info("No stored analysis yet: open *New analysis* above and press *Run analysis*.")
else:
    with page_session() as session:
        stored = get_analysis(shown.id, session=session)
    _show(stored)

# Keep the class order visible next to the tables.
st.caption(
    "Classes: "
    + " · ".join(CLASS_ORDER)
    + ". Conditions are perturbation categories; questions are the bootstrap cluster."
)
