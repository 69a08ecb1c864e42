"""The ``sources`` command group: source reliance (own answer vs user vs document)."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

_out = Console(highlight=False, width=None if os.isatty(1) else 150)

sources_app = typer.Typer(
    name="sources",
    help=(
        "Source reliance: does the model keep its own correct answer against a user or a "
        "document, adopt a correct correction, and tell the two apart?"
    ),
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``sources`` group to the root application."""
    app.add_typer(sources_app, name="sources")


def _term(text: object) -> str:
    """Untrusted text for the terminal: no control characters, no rich markup."""
    s = "".join(
        ch if unicodedata.category(ch)[0] != "C" else "\N{REPLACEMENT CHARACTER}"
        for ch in str(text)
    )
    return escape(s)


def _f(x: Any, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _fail(exc: BaseException, path: Path | None = None) -> typer.Exit:
    from app.cli.errors import report_user_error
    from storage.errors import DriftLensError

    if os.environ.get("DRIFTLENS_DEBUG") == "1":
        raise exc
    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
        exc = DriftLensError(f"{exc.filename or path}: {exc.strerror or exc}")
    return typer.Exit(report_user_error(exc, debug=False))


def render_stats(result: dict[str, Any]) -> None:
    """Print the per-(model, dataset) summary tables of a stats result."""
    meta = result["meta"]
    for model, datasets in result["models"].items():
        for dataset, c in datasets.items():
            table = Table(
                title=(
                    f"{_term(model)} · {_term(dataset)} — {c['n_questions']} questions, "
                    f"bare accuracy {_f(c['bare_accuracy'])} (B = {meta['bootstrap']})"
                ),
                title_justify="left",
            )
            for col in ("source", "PAR+", "SDR+", "PAR-", "SDR-", "type", "P(type)"):
                table.add_column(col, justify="left" if col in ("source", "type") else "right")
            for s in ("user", "doc"):
                b = c["behaviour"][s]
                ci = c["rate_ci"][s]
                t = b["type"]
                table.add_row(
                    s,
                    f"{_f(c['par_plus'][s])} [{_f(ci['par_plus'][0])}, {_f(ci['par_plus'][1])}]",
                    f"{_f(c['sdr_plus'][s])} [{_f(ci['sdr_plus'][0])}, {_f(ci['sdr_plus'][1])}]",
                    _f(c["par_minus"][s]),
                    _f(c["sdr_minus"][s]),
                    t or "undefined",
                    _f(b["share"][t]) if t else "–",
                )
            _out.print(table)
            o = c["odds_ratios"]
            _out.print(
                f"  odds ratios: parametric {_f(o['parametric'])}, user {_f(o['user'])}, "
                f"doc {_f(o['doc'])}; Self% {_f(c['self_pct'], 1)}, U% {_f(c['user_pct'], 1)}, "
                f"D% {_f(c['doc_pct'], 1)}, U%/D% {_f(c['u_over_d'])}"
                + (" (separation flagged)" if c.get("separation") else "")
            )
            nb = c.get("without_bare")
            if nb:
                _out.print(
                    f"  without bare rows: Self% {_f(nb['self_pct'], 1)}, "
                    f"U%/D% {_f(nb['u_over_d'])}"
                )
            if c["kl"]:
                kl = ", ".join(f"{v} {_f(x)}" for v, x in c["kl"].items())
                _out.print(f"  KL vs bare (bits): {kl}")
            for r in c["regressions"]:
                if r.get("error"):
                    _out.print(
                        f"  regression tier {_term(r['tier'])!r} {r['ordering'] or '-'}: "
                        f"not fitted ({_term(r['error'])})"
                    )


@sources_app.command("stats")
def stats_cmd(
    table: Path = typer.Argument(
        ...,
        help=(
            "CSV probe table: model, dataset, tier, ordering, question_id, variant, choice, "
            "correct_choice, wrong_choice [, p_correct, p_wrong, p_other]."
        ),
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write the full results as JSON here."
    ),
    bootstrap: int = typer.Option(
        2000, "--bootstrap", "-B", min=1, help="Question-cluster bootstrap replicates."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Random seed (same seed, same numbers)."),
) -> None:
    """PAR±/SDR± with behaviour-type uncertainty, source odds ratios, KL and ΔNLL."""
    from storage.errors import DriftLensError

    try:
        from study.sources.analysis import analyze_sources_table, read_sources_csv

        df = read_sources_csv(table)
        result = analyze_sources_table(
            df, bootstrap=bootstrap, seed=seed, source=str(table)
        ).to_dict()
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc, table) from None
    render_stats(result)
    if json_out is not None:
        _out.print(f"Wrote {_term(json_out)}")
