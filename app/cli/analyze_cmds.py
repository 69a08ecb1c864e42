"""``driftlens analyze``: drift table, statistics and the report folder of one run."""

from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape  # run/model names may hold [..], which rich reads as markup
from rich.table import Table

from app.cli.console import SafeConsole
from app.cli.context import session_for, settings
from app.cli.executor_args import ADDRESS_OPTION, EXECUTOR_OPTION, executor_for
from app.cli.job_hooks import report_stage
from app.cli.options import ALLOW_SELF_JUDGING_OPTION
from app.cli.progress import progress_callback
from app.cli.request_limits import bootstrap_option

if TYPE_CHECKING:
    from study.reasoning.analysis import AnalysisResult

# a pipe or file gets a wide table instead of rich's 80-column default
_out = SafeConsole(highlight=False, width=None if os.isatty(1) else 150)


def register(app: typer.Typer) -> None:
    """Add ``analyze`` to the root application."""
    app.command("analyze")(analyze_cmd)


def analyze_cmd(
    ctx: typer.Context,
    run: list[str] = typer.Option(
        ..., "--run", help="Generation run; repeat (or a,b) to put several models side by side."
    ),
    labeler: str = typer.Option(..., "--labeler", help="Labeler spec whose labels to use."),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Report folder (default: a new folder reports/<runs>-<labeler>[-N] in the "
        "workspace; a folder holding another stored analysis's report is refused).",
    ),
    bootstrap: int = bootstrap_option(
        10_000, help="Cluster-bootstrap replicates (below 2,000 the output is flagged)"
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="Bootstrap seed (default: the workbench's fixed seed)."
    ),
    ontology_version: str | None = typer.Option(
        None, "--ontology-version", help="Version id, NAME or NAME@N (default: latest driftlens)."
    ),
    label: bool = typer.Option(
        False, "--label", help="Label responses the labeler has not labeled yet, first."
    ),
    chunk_questions: int | None = typer.Option(
        None,
        "--chunk-questions",
        min=1,
        help="Out of core: build the drift table and statistics this many questions at a "
        "time (memory bounded by a slice, not the study; the same files).",
    ),
    executor: str | None = EXECUTOR_OPTION,
    address: str | None = ADDRESS_OPTION,
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
) -> None:
    """Compute DTW and SRI drift, the statistics and calibration, and write the report.

    With ``--chunk-questions`` and ``--executor`` each model's statistics are computed in
    a task (its drift rows read from the shared database), the same ``stats.json``.
    """

    from ontology.versions import seed_ontologies
    from study.jobs.reporter import record_result
    from study.reasoning.analysis import analyze_run
    from study.reasoning.config import DEFAULT_SEED

    names = ", ".join(run)
    # One live display at a time: the labeling bar when labeling, else a spinner.
    labeling = progress_callback(f"labeling {names}") if label else nullcontext(None)
    status = (
        nullcontext() if label else SafeConsole(stderr=True).status(f"Analysing {escape(names)}…")
    )
    if not label:
        report_stage(f"analysing {names} (B = {bootstrap:,})")  # the job's stage
    runner = executor_for(ctx, executor, address)
    stats_on = None
    if runner is not None:
        from study.reasoning.sharded.analysis import StatsExecutor

        stats_on = StatsExecutor(runner, settings(ctx))
    with session_for(ctx) as session, labeling as update, status:
        seed_ontologies(session=session)
        result = analyze_run(
            run,
            labeler,
            session=session,
            out_dir=out,
            bootstrap=bootstrap,
            seed=DEFAULT_SEED if seed is None else seed,
            ontology_version=ontology_version,
            label_first=label,
            progress=update,
            chunk_questions=chunk_questions,
            executor=stats_on,
            allow_self_judging=allow_self_judging,
        )
    record_result(analysis=result.analysis_id, run=run[0])
    if result.simulated:
        _out.print("[bold red]SIMULATED DATA[/] — responses come from the drift simulator.")
    print_drift_summary(
        result, title=f"Drift tiers — {escape(names)} · {escape(labeler)} (B = {bootstrap})"
    )
    _print_calibrated(result)
    _out.print(f"Analysis {result.analysis_id} stored; core: {result.provenance.implementation}.")
    _out.print(f"Open {result.files['report_html'].resolve()}", soft_wrap=True)


def _print_calibrated(result: AnalysisResult) -> None:
    """The drift headlines calibrated to a pulled label_check slice, where there is one."""
    from storage.safe_text import escape_control
    from study.reasoning.calibrated import CalibratedDrift, calibrated_lines

    block = result.stats.get("calibrated")
    if not isinstance(block, dict):
        return
    cal = CalibratedDrift.from_dict(block)
    for line in calibrated_lines(cal):
        _out.print(escape(escape_control(line)), soft_wrap=True)


def print_drift_summary(result: AnalysisResult, *, title: str, show_model: bool = True) -> None:
    """Print the drift tiers (mean drift per class and metric) and the validity verdicts.

    The cells come from :mod:`study.reasoning.drift_summary` (plain text, escaped here for
    Rich's markup); ``show_model=False`` drops the model column when there is one model.
    """
    from study.reasoning.drift_summary import TEXT_COLUMNS, tier_rows, validity_lines

    columns, rows = tier_rows(result, show_model=show_model)
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, justify="left" if col in TEXT_COLUMNS else "right")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    _out.print(table)
    for line in validity_lines(result, show_model=show_model):
        _out.print(line, markup=False)
