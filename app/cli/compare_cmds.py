"""``driftlens compare``: paired comparison of two or more runs of one instrument."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from app.cli.console import fmt_p, out_console
from app.cli.context import session_for
from app.cli.output import write_json
from app.cli.request_limits import bootstrap_option
from study.limits import TOP_ITEMS

_out = out_console(width=None if os.isatty(1) else 160)


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the root application."""
    app.command("compare")(compare_cmd)


def _f(x: float, digits: int = 3) -> str:
    return "–" if not math.isfinite(x) else f"{x:.{digits}f}"


def compare_cmd(
    ctx: typer.Context,
    runs: Annotated[list[str], typer.Argument(help="Two or more runs (RUN_A RUN_B [RUN_C …]).")],
    instrument: Annotated[
        str,
        typer.Option("--instrument", "-i", help="reasoning, disposition, conflicts or sources."),
    ] = "reasoning",
    labeler: Annotated[
        str | None, typer.Option("--labeler", "-l", help="Reasoning drift: the labeler.")
    ] = None,
    study: Annotated[
        str | None, typer.Option("--study", help="Disposition: the study of the arms.")
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
    versions: Annotated[
        str | None,
        typer.Option(
            "--versions",
            help="Reasoning: compare one run's labels and drift under two ontology versions "
            "(A,B: ids, NAME or NAME@N).",
        ),
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
    if instrument == "reasoning" and not labeler:
        raise InputError("Reasoning drift runs are compared under one labeler: pass --labeler.")
    if versions is not None:
        _versions(ctx, runs, versions, labeler=labeler, bootstrap=bootstrap, seed=seed,
                  alpha=alpha, json_out=json_out)  # fmt: skip
        return
    options = CompareOptions(
        labeler=labeler, study=study, margin=parse_margin(margin), alpha=alpha,
        n_boot=bootstrap, seed=seed, top_items=top,
    )  # fmt: skip
    from app.cli.job_hooks import report_stage
    from app.cli.progress import progress_callback

    # Each bar is a stage of the command's job row (a shell's compare is a job too).
    with session_for(ctx) as session, progress_callback("Comparing runs") as update:
        result = compare_runs(
            runs, instrument=instrument, session=session, options=options, progress=update
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
        table.add_row(
            r.run_a, r.run_b, r.statistic, r.scope, _f(r.value_a), _f(r.value_b), _f(r.diff),
            f"[{_f(r.ci_low)}, {_f(r.ci_high)}]", fmt_p(r.p_adjusted), r.test, fmt_p(r.p_test),
            _f(r.mdd), str(r.n_items), r.verdict,
        )  # fmt: skip
    _out.print(table)
    for line in matching_lines(result):
        _out.print(line)
    _out.print(f"Equivalence: {result.margin_note}; BH over {len(result.rows)} comparisons.")
    if result.ranking:
        _out.print("Ranking (runs sharing a letter cannot be separated):")
        for rr in result.ranking:
            _out.print(f"  {rr.statistic} · {rr.scope}: {rr.run} {_f(rr.value)} {rr.letters}")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        # Written whole then renamed: a page waiting for the file never reads half of it.
        part = json_out.with_name(json_out.name + ".part")
        part.write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n")
        part.replace(json_out)
        _out.print(f"JSON written to {json_out}")
    if report_files is not None:
        _out.print(f"Report written to {report_files['report_html']}")


def _versions(
    ctx: typer.Context,
    runs: list[str],
    versions: str,
    *,
    labeler: str | None,
    bootstrap: int,
    seed: int,
    alpha: float,
    json_out: Path | None,
) -> None:
    """``compare RUN --versions A,B``: the ontology-version comparison of one run."""
    from storage.errors import InputError
    from study.reasoning.version_compare import compare_versions

    names = [v.strip() for v in versions.split(",") if v.strip()]
    if len(names) != 2 or len(runs) != 1:
        raise InputError("--versions takes two versions (A,B) and exactly one run.")
    if not labeler:
        raise InputError("Pass --labeler: the labels of one labeler are compared.")
    with session_for(ctx) as session:
        vc = compare_versions(runs[0], names[0], names[1], labeler=labeler, session=session,
                              n_boot=bootstrap, seed=seed, alpha=alpha)  # fmt: skip
    _out.print(
        f"{vc.run} ({vc.labeler}): {vc.version_a} → {vc.version_b}: {vc.changed} of "
        f"{vc.shared_steps} steps changed leaf ({_f(vc.changed_share * 100, 1)} %), "
        f"Cohen's κ {_f(vc.kappa)}; {vc.only_a} step(s) labeled only under {vc.version_a}, "
        f"{vc.only_b} only under {vc.version_b}."
    )
    table = Table(title="Per-leaf flow (most steps first)", title_justify="left")
    for name in ("leaf (A)", "steps", "kept", "went to (B)"):
        table.add_column(name, justify="left" if name != "steps" and name != "kept" else "right")
    for f in vc.flows:
        moved = ", ".join(f"{leaf} {n}" for leaf, n in f.to if leaf != f.leaf_a) or "–"
        table.add_row(f.leaf_a, str(f.steps), str(f.kept), moved)
    _out.print(table)
    flips = Table(title="Drift conclusions that flipped (BH-adjusted p < α under one version only)",
                  title_justify="left")  # fmt: skip
    for name in ("metric", "scope", "d_rel A", "p adj A", "d_rel B", "p adj B"):
        flips.add_column(name)
    for fl in vc.flips:
        flips.add_row(fl.metric, fl.scope, _f(fl.drel_a), fmt_p(fl.p_adjusted_a), _f(fl.drel_b),
                      fmt_p(fl.p_adjusted_b))  # fmt: skip
    _out.print(flips if vc.flips else "No drift conclusion flipped between the versions.")
    if json_out is not None:
        write_json(json_out, vc.to_dict())
        _out.print(f"JSON written to {json_out}")
