"""``driftlens conflicts``: the memory-conflict instrument (banks, rubric judges, statistics)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

_out = Console(highlight=False, width=None if os.isatty(1) else 150)

conflicts_app = typer.Typer(
    name="conflicts",
    help="Memory conflicts: banks of conflicting memories, rubric judges, statistics.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``conflicts`` group to the root application."""
    app.add_typer(conflicts_app, name="conflicts")


def _num(x: Any, digits: int = 2) -> str:
    return "–" if x is None else f"{float(x):.{digits}f}"


def print_stats(result: dict[str, Any]) -> None:
    """Print the score table, distractor effect, judge agreement and D6 shares."""
    table = Table(title="rubric scores (mean [95% CI], instance-cluster bootstrap)")
    for col in ("model", "judge", "type", "d1", "d2", "d3", "d4", "d5", "total"):
        table.add_column(col)
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in result["scores"]:
        key = (r["model"], r["judge"], r["type"])
        cells.setdefault(key, {})[r["dimension"]] = (
            f"{_num(r['mean'])} [{_num(r['ci_low'])}, {_num(r['ci_high'])}]"
        )
    for (model, judge, type_), dims in cells.items():
        table.add_row(
            Text(model),
            Text(judge),
            type_,
            *(dims.get(d, "–") for d in ("d1", "d2", "d3", "d4", "d5", "total")),
        )
    _out.print(table)
    if result["distractor_effect"]:
        eff = Table(title="paired distractor effect on the total (most minus fewest distractors)")
        for col in ("model", "judge", "from→to", "mean diff", "95% CI", "MDD", "equiv. ±"):
            eff.add_column(col)
        for r in result["distractor_effect"]:
            eff.add_row(
                Text(r["model"]),
                Text(r["judge"]),
                f"{r['from']}→{r['to']}",
                _num(r["mean_diff"]),
                f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]",
                _num(r["mdd"]),
                _num(r["equivalence_bound"]),
            )
        _out.print(eff)
    if result["judge_agreement"]:
        agr = Table(title="judge agreement (reported separately, never averaged)")
        for col in ("judges", "dimension", "QWK", "exact", "within one", "MAE", "α ordinal"):
            agr.add_column(col)
        for r in result["judge_agreement"]:
            pair = Text(f"{r['judge_a']} vs {r['judge_b']}")
            if r["dimension"] == "total":
                agr.add_row(
                    pair,
                    "total",
                    f"Pearson {_num(r['pearson'])} [{_num(r['pearson_ci_low'])}, "
                    f"{_num(r['pearson_ci_high'])}]",
                    f"Spearman {_num(r['spearman'])} [{_num(r['spearman_ci_low'])}, "
                    f"{_num(r['spearman_ci_high'])}]",
                    "",
                    "",
                    "",
                )
            else:
                agr.add_row(
                    pair,
                    r["dimension"],
                    _num(r["qwk"]),
                    _num(r["exact"]),
                    _num(r["within_one"]),
                    _num(r["mae"]),
                    _num(r["alpha_ordinal"]),
                )
        _out.print(agr)
    if result["d6"]:
        d6 = Table(title="D6 commitment on high-risk instances (Wilson 95% CI)")
        for col in ("model", "judge", "flag", "share", "95% CI", "k / n"):
            d6.add_column(col)
        for r in result["d6"]:
            d6.add_row(
                Text(r["model"]),
                Text(r["judge"]),
                r["flag"],
                _num(r["share"]),
                f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]",
                f"{r['k']} / {r['n']}",
            )
        _out.print(d6)


@conflicts_app.command("stats")
def stats_cmd(
    table: Path = typer.Argument(
        ...,
        help="CSV: model, judge, instance_id, type, distractors, d1..d5 (0-4, empty = n/a), "
        "d6 (safe/partial/unsafe or empty).",
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the results as JSON here."),
    bootstrap: int = typer.Option(2000, "--bootstrap", "-B", min=1, help="Bootstrap replicates."),
    seed: int | None = typer.Option(None, "--seed", help="Random seed (same seed, same numbers)."),
) -> None:
    """Rubric means with CIs, paired distractor effect, judge agreement and D6 shares."""
    from study.conflicts.analysis import analyze_scores, read_scores_csv

    result = analyze_scores(read_scores_csv(table), bootstrap=bootstrap, seed=seed).to_dict()
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
    print_stats(result)
    if json_out is not None:
        _out.print(f"Wrote {json_out}", markup=False)


@conflicts_app.command("import")
def import_cmd(
    ctx: typer.Context,
    file: Path | None = typer.Argument(
        None, help="JSONL bank file (one instance per line); omit with --sample."
    ),
    sample: bool = typer.Option(False, "--sample", help="Import the shipped sample banks."),
    check: bool = typer.Option(False, "--check", help="Only validate; store nothing."),
) -> None:
    """Validate memory banks (word counts, person, timestamps, leakage...) and store them."""
    from app.cli.context import session_for
    from storage.errors import InputError
    from study.conflicts.items import import_bank_file, read_banks, sample_banks_path

    if file is None and not sample:
        raise InputError("Give a JSONL bank file, or --sample for the shipped sample.")
    if check:
        instances = read_banks(file or sample_banks_path())
        _out.print(f"{len(instances)} instance(s) valid; nothing stored (--check).", markup=False)
        return
    with session_for(ctx) as session:
        res = import_bank_file(None if sample else file, session=session)
    _out.print(
        f"Imported {res.total} bank instance(s) from {res.source}: {res.inserted} new, "
        f"{res.updated} updated, {res.unchanged} unchanged.",
        markup=False,
    )
