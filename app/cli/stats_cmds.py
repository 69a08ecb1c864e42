"""``driftlens stats``: d_rel with cluster-bootstrap CIs, mixed model, calibration, validity."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from app.cli.console import fmt_num, fmt_p, out_console
from app.cli.options import RANDOM_SEED_OPTION
from app.cli.output import write_json
from app.cli.request_limits import bootstrap_option

# a pipe or file gets a wide table instead of rich's 80-column default
_out = out_console(width=None if os.isatty(1) else 150)


def register(app: typer.Typer) -> None:
    """Add ``stats`` to the root application."""
    app.command("stats")(stats_cmd)


def _render(result: dict[str, Any]) -> None:
    meta = result["meta"]
    for model, mres in result["models"].items():
        for metric, r in mres["metrics"].items():
            floor = r["noise_floor"]
            table = Table(
                title=(
                    f"{model} · {metric} — noise floor mean {fmt_num(floor['mean'], 3)}, "
                    f"sd {fmt_num(floor['sd'], 3)} "
                    f"(B = {meta['bootstrap']}, {meta['implementation']})"
                ),
                title_justify="left",
            )
            for col in (
                "condition",
                "class",
                "n",
                "mean",
                "d_rel",
                "95% CI",
                "p adj",
                "Cohen d",
                "letters",
                "MDD",
                "equiv.",
            ):
                table.add_column(
                    col, justify="left" if col in ("condition", "class", "letters") else "right"
                )
            for name, c in sorted(
                r["conditions"].items(), key=lambda kv: -(kv[1]["d_rel"] or float("-inf"))
            ):
                ci = (
                    f"[{fmt_num(c['ci_low'], 3)}, {fmt_num(c['ci_high'], 3)}]"
                    if c["ci_low"] is not None
                    else "–"
                )
                table.add_row(
                    name + (" *" if c["flags"] else ""),
                    c["class"],
                    str(c["n"]),
                    fmt_num(c["mean"], 3),
                    fmt_num(c["d_rel"], 3),
                    ci,
                    fmt_p(c["p_adjusted"]),
                    fmt_num(c["cohens_d"], 2),
                    c["letters"],
                    fmt_num(c["mdd"], 3),
                    fmt_num(c["equivalence_bound"], 3),
                )
            _out.print(table)
            mm = r["mixed_model"]
            if "error" in mm:
                _out.print(f"  mixed model: not fitted ({mm['error']})")
            else:
                _out.print(
                    f"  mixed model (REML, reference {mm['reference']}): intercept "
                    f"{fmt_num(mm['intercept'], 3)}, "
                    f"var(question) {fmt_num(mm['var_question'], 4)}, "
                    f"var(residual) {fmt_num(mm['var_residual'], 4)}, ICC {fmt_num(mm['icc'], 3)}"
                )
            v = r["validity"]
            _out.print(
                f"  specificity: {v['specificity']['detail']}; "
                f"sensitivity: {v['sensitivity']['detail']}"
            )
            nt = r["null_test"]
            if nt["available"]:
                _out.print(
                    "  null test: mean sample-vs-sample difference "
                    f"{fmt_num(nt['mean_difference'], 4)}, "
                    f"CI excludes 0 in {fmt_num(nt['fraction_excluding_zero'], 2)} of conditions"
                )
            for flag in r["flags"]:
                _out.print(f"  note: {flag}")
            flagged = {n: c["flags"] for n, c in r["conditions"].items() if c["flags"]}
            for n, flags in flagged.items():
                _out.print(f"  * {n}: {'; '.join(flags)}")
        conv = mres["convergent_validity"]
        _out.print(f"{model} · convergent validity: {conv['detail']}")


def stats_cmd(
    table: Path = typer.Argument(
        ..., help="CSV drift table (question_id, condition, condition_class, metrics...)."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write the full results as JSON here."
    ),
    bootstrap: int = bootstrap_option(
        10_000, help="Cluster-bootstrap replicates (below 2,000 the output is flagged)"
    ),
    seed: int | None = RANDOM_SEED_OPTION,
    margin: float = typer.Option(
        0.2,
        "--margin",
        min=0.0,
        help="Equivalence margin (d_rel) of the specificity check: noise passes inside ±margin.",
    ),
    metrics: str | None = typer.Option(
        None,
        "--metrics",
        help="Comma-separated metric columns (default: all but the reserved ones and n_*).",
    ),
    keep_first: bool = typer.Option(
        False,
        "--keep-first",
        help="Use the first of rows that repeat an earlier row in every column "
        "(default: refuse the table and name their lines).",
    ),
) -> None:
    """Effect sizes with cluster-bootstrap CIs, mixed model, calibration and validity checks."""
    from app.cli.errors import report_user_error
    from storage.errors import DriftLensError

    try:
        from driftlens_core.analysis import analyze_table
        from study.reasoning.stats_table import read_stats_csv, repeated_rows, stats_input

        chosen = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
        df = read_stats_csv(table)
        inp = stats_input(df, metrics=chosen, source=table, keep_first=keep_first)
        repeats = repeated_rows(df) if keep_first else []
        result = analyze_table(inp, bootstrap=bootstrap, seed=seed, margin=margin).to_dict()
        if repeats:
            result["meta"]["flags"] = [
                *result["meta"].get("flags", []),
                f"{len(repeats)} repeated row(s) left out (--keep-first)",
            ]
        if json_out is not None:
            write_json(json_out, result)
    except (DriftLensError, ValueError, OSError) as exc:
        if os.environ.get("DRIFTLENS_DEBUG") == "1":
            raise
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
            exc = DriftLensError(f"{exc.filename or table}: {exc.strerror or exc}")
        # one clear line on stderr, also when the app runs without ``main`` (CliRunner)
        raise typer.Exit(report_user_error(exc, debug=False)) from None
    if repeats:
        lines = ", ".join(str(line) for line, _ in repeats[:10])
        more = f" and {len(repeats) - 10} more" if len(repeats) > 10 else ""
        _out.print(f"--keep-first: left out {len(repeats)} repeated row(s) (lines {lines}{more}).")
    _render(result)
    if json_out is not None:
        _out.print(f"Wrote {json_out}")
