"""``driftlens compare``: paired comparison of two or more runs of one instrument."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from app.cli.console import fmt_finite, fmt_p, out_console
from app.cli.context import session_for
from app.cli.request_limits import bootstrap_option
from driftlens_plugins import instruments
from study.limits import TOP_ITEMS

_out = out_console(width=None if os.isatty(1) else 160)
#: The registered instruments' names, in their order (the ``--instrument`` help).
_INSTRUMENT_NAMES = ", ".join(p.name for p in instruments())


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the root application."""
    app.command("compare")(compare_cmd)


def default_instrument() -> str:
    """The instrument ``compare`` takes when none is named: the first the registry lists."""
    return instruments()[0].name


def compare_cmd(
    ctx: typer.Context,
    runs: Annotated[list[str], typer.Argument(help="Two or more runs (RUN_A RUN_B [RUN_C …]).")],
    instrument: Annotated[
        str | None,
        typer.Option(
            "--instrument",
            "-i",
            help=f"The instrument whose runs these are: {_INSTRUMENT_NAMES} (default: the first).",
        ),
    ] = None,
    labeler: Annotated[
        str | None,
        typer.Option("--labeler", "-l", help="Runs compared by their step labels: whose labels."),
    ] = None,
    study: Annotated[
        str | None,
        typer.Option("--study", help="Runs that are arms of a study: the study."),
    ] = None,
    margin: Annotated[
        str | None,
        typer.Option(
            "--margin",
            help="Equivalence margin (statistic units), or 'mdd' for each row's own MDD "
            "(default: the instrument's).",
        ),
    ] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Level of tests, BH and TOST.")] = 0.05,
    bootstrap: int = bootstrap_option(2000),
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    top: Annotated[
        int,
        typer.Option(
            "--top",
            min=int(TOP_ITEMS.low),
            max=int(TOP_ITEMS.high),
            help="Most different items kept per pair (0..10,000).",
        ),
    ] = 20,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the comparison as JSON here.")
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Write the report (HTML, Markdown, JSON) into this folder."),
    ] = None,
) -> None:
    """Compare runs on the items they share: paired differences, tests, BH, TOST, letters."""
    from storage.errors import InputError
    from study.compare import CompareOptions, compare_runs, matching_lines, parse_margin

    if not 0 < alpha < 0.5:
        raise InputError("--alpha must lie between 0 and 0.5.")
    name = instrument or default_instrument()
    options = CompareOptions(
        labeler=labeler, study=study, margin=parse_margin(margin), alpha=alpha,
        n_boot=bootstrap, seed=seed, top_items=top,
    )  # fmt: skip
    from app.cli.job_hooks import report_stage
    from app.cli.progress import progress_callback

    # Each bar is a stage of the command's job row (a shell's compare is a job too).
    with session_for(ctx) as session, progress_callback("Comparing runs") as update:
        result = compare_runs(
            runs, instrument=name, session=session, options=options, progress=update
        )
    report_files = None
    if out_dir is not None:
        from study.compare.report import write_comparison_report

        report_stage("Writing the report")
        report_files = write_comparison_report(result, out_dir)
    mark = " [simulated]" if result.simulated else ""
    table = Table(
        title=f"{result.instrument}: {result.headline}{mark} — B − A, B = {bootstrap}",
        title_justify="left",
    )
    for name in ("A", "B", "statistic", "scope", "A value", "B value", "B − A", "95% CI",
                 "p adj", "test", "test p", "MDD", "n", "verdict"):  # fmt: skip
        table.add_column(name, justify="left" if name in ("A", "B", "statistic", "scope",
                         "test", "verdict") else "right")  # fmt: skip
    for r in result.rows:
        num = fmt_finite
        table.add_row(
            r.run_a, r.run_b, r.statistic, r.scope, num(r.value_a), num(r.value_b), num(r.diff),
            f"[{num(r.ci_low)}, {num(r.ci_high)}]", fmt_p(r.p_adjusted), r.test, fmt_p(r.p_test),
            num(r.mdd), str(r.n_items), r.verdict,
        )  # fmt: skip
    _out.print(table)
    for line in matching_lines(result):
        _out.print(line)
    _out.print(f"Equivalence: {result.margin_note}; BH over {len(result.rows)} comparisons.")
    if result.ranking:
        _out.print("Ranking (runs sharing a letter cannot be separated):")
        for rr in result.ranking:
            _out.print(
                f"  {rr.statistic} · {rr.scope}: {rr.run} {fmt_finite(rr.value)} {rr.letters}"
            )
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        # Written whole then renamed: a page waiting for the file never reads half of it.
        part = json_out.with_name(json_out.name + ".part")
        part.write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n")
        part.replace(json_out)
        _out.print(f"JSON written to {json_out}")
    if report_files is not None:
        _out.print(f"Report written to {report_files['report_html']}")
