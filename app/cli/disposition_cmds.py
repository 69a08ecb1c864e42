"""The ``disposition`` command group: the disposition drift instrument (seed 001)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from app.cli.console import SafeConsole

# a pipe or file gets a wide table instead of rich's 80-column default
_out = SafeConsole(highlight=False, width=None if os.isatty(1) else 160)

disposition_app = typer.Typer(
    name="disposition",
    help=(
        "Disposition drift across model versions: aligned rates of arms against a reference "
        "arm, with stem-bootstrap intervals, null test, MDD and equivalence bounds."
    ),
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``disposition`` group to the root application."""
    app.add_typer(disposition_app, name="disposition")


def _f(x: Any, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _p(x: float | None) -> str:
    if x is None:
        return "–"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def render_stats(result: dict[str, Any]) -> None:
    """Print one table per battery plus the null-test summary and noise shares."""
    meta = result["meta"]
    for battery, b in result["batteries"].items():
        table = Table(
            title=(
                f"{escape(battery)} — drift vs {escape(meta['reference'])} (pp); primary "
                f"interval: {meta['primary_interval']}, B = {meta['bootstrap']}, "
                f"bound ±{meta['bound_pp']:g} pp"
            ),
            title_justify="left",
        )
        for col in (
            "arm",
            "aligned",
            "drift",
            "95% CI",
            "plain 95% CI",
            "SE",
            "MDD",
            "equiv.",
            "within",
            "p adj",
            "stems",
            "n",
            "missing",
        ):
            table.add_column(col, justify="left" if col == "arm" else "right")
        for arm, a in b["arms"].items():
            ci = f"[{_f(a['ci_low'])}, {_f(a['ci_high'])}]" if a["ci_low"] is not None else "–"
            plain = (
                f"[{_f(a['ci_plain_low'])}, {_f(a['ci_plain_high'])}]"
                if a["ci_plain_low"] is not None
                else "–"
            )
            within = {None: "–", True: "yes", False: "NO"}[a["within_bound"]]
            table.add_row(
                escape(arm),
                f"{100 * a['aligned_rate']:.1f}%" if a["aligned_rate"] is not None else "–",
                _f(a["drift_pp"]),
                ci,
                plain,
                _f(a["se"], 2),
                _f(a["mdd"]),
                _f(a["equivalence_bound"]),
                within,
                _p(a["p_adjusted"]),
                str(a["n_stems"]),
                str(a["n_responses"]),
                str(a["n_missing"]),
            )
        _out.print(table)
        null = b["null_test"]
        if null:
            k = sum(1 for v in null.values() if v["excludes_zero"])
            _out.print(
                f"  null test (sample 1 vs 2): {k} of {len(null)} arms exclude 0, expected ≈ 5%"
            )
        noise = b["noise"]
        _out.print(
            "  noise shares: "
            + ", ".join(
                f"{k.replace('_', '-')} {'–' if v is None else f'{100 * v:.0f}%'}"
                for k, v in noise.items()
            )
        )


def _fail(exc: BaseException, path: Path) -> typer.Exit:
    from app.cli.errors import report_user_error
    from storage.errors import DriftLensError

    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
        exc = DriftLensError(f"{exc.filename or path}: {exc.strerror or exc}")
    return typer.Exit(report_user_error(exc, debug=False))


@disposition_app.command("stats")
def stats_cmd(
    table: Path = typer.Argument(
        ...,
        help="CSV with columns battery, stem, probe, arm, sample, aligned [, classifier_repeat].",
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the results as JSON here."),
    reference: str | None = typer.Option(
        None,
        "--reference",
        help="Reference arm (default: an arm named 'reference', else the first).",
    ),
    bootstrap: int = typer.Option(10_000, "--bootstrap", "-B", min=1, help="Stem resamples."),
    seed: int | None = typer.Option(None, "--seed", help="Random seed (same seed, same numbers)."),
    bound: float = typer.Option(
        5.0, "--bound", min=0.0, help="Equivalence bound in percentage points."
    ),
) -> None:
    """Aligned rates, drift vs the reference arm, null test and noise shares of a rate table."""
    from storage.errors import DriftLensError
    from study.disposition.analysis import analyze_rates, read_rate_table

    try:
        df = read_rate_table(table)
        result = analyze_rates(
            df, reference=reference, n_boot=bootstrap, seed=seed, bound_pp=bound
        ).to_dict()
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
    except (DriftLensError, ValueError, OSError) as exc:
        if os.environ.get("DRIFTLENS_DEBUG") == "1":
            raise
        raise _fail(exc, table) from None
    render_stats(result)
    if json_out is not None:
        _out.print(f"Wrote {json_out}")
