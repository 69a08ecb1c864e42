"""What ``driftlens conflicts stats``, ``report`` and ``study`` print: the statistics tables."""

from __future__ import annotations

import os
from typing import Any

from rich.table import Table
from rich.text import Text

from app.cli.console import SafeConsole

_out = SafeConsole(highlight=False, width=None if os.isatty(1) else 150)


def fixed(x: Any, digits: int = 2) -> str:
    """A number to ``digits`` places for a cell (``–`` when missing)."""
    return "–" if x is None else f"{float(x):.{digits}f}"


def _ci(row: dict[str, Any]) -> str:
    """A row's 95% interval for a cell: ``[ci_low, ci_high]`` to two places."""
    return f"[{fixed(row['ci_low'])}, {fixed(row['ci_high'])}]"


def print_stats(result: dict[str, Any]) -> None:
    """Print the score table, distractor effect, judge agreement and D6 shares."""
    interval = result.get("meta", {}).get("interval", "instance-cluster bootstrap")
    table = Table(title=f"rubric scores (mean [95% CI]; {interval})")
    for col in ("model", "judge", "type", "d1", "d2", "d3", "d4", "d5", "total"):
        table.add_column(col)
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in result["scores"]:
        key = (r["model"], r["judge"], r["type"])
        cells.setdefault(key, {})[r["dimension"]] = f"{fixed(r['mean'])} {_ci(r)}"
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
                fixed(r["mean_diff"]),
                _ci(r),
                fixed(r["mdd"]),
                fixed(r["equivalence_bound"]),
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
                    f"Pearson {fixed(r['pearson'])} [{fixed(r['pearson_ci_low'])}, "
                    f"{fixed(r['pearson_ci_high'])}]",
                    f"Spearman {fixed(r['spearman'])} [{fixed(r['spearman_ci_low'])}, "
                    f"{fixed(r['spearman_ci_high'])}]",
                    "",
                    "",
                    "",
                )
            else:
                agr.add_row(
                    pair,
                    r["dimension"],
                    fixed(r["qwk"]),
                    fixed(r["exact"]),
                    fixed(r["within_one"]),
                    fixed(r["mae"]),
                    fixed(r["alpha_ordinal"]),
                )
        _out.print(agr)
    if result.get("agreement_by_type"):
        bt = Table(title="agreement by conflict type (D1-D5 pairs pooled)")
        for col in ("raters", "type", "within one", "exact", "MAE", "QWK", "pairs"):
            bt.add_column(col)
        for r in result["agreement_by_type"]:
            bt.add_row(
                Text(f"{r['judge_a']} vs {r['judge_b']}"),
                r["type"],
                fixed(r["within_one"]),
                fixed(r["exact"]),
                fixed(r["mae"]),
                fixed(r["qwk"]),
                str(r["n"]),
            )
        _out.print(bt)
    if result["d6"]:
        d6 = Table(title="D6 commitment on high-risk instances (Wilson 95% CI)")
        for col in ("model", "judge", "flag", "share", "95% CI", "k / n"):
            d6.add_column(col)
        for r in result["d6"]:
            d6.add_row(
                Text(r["model"]),
                Text(r["judge"]),
                r["flag"],
                fixed(r["share"]),
                _ci(r),
                f"{r['k']} / {r['n']}",
            )
        _out.print(d6)
    _print_abstention(result)


def _print_abstention(result: dict[str, Any]) -> None:
    """The abstention rates (answers that ask, check or decline instead of advising)."""
    rows = result.get("abstention") or []
    table = Table(title="abstention rate (clarify / verify / defer; Wilson 95% CI)")
    for col in ("model", "judge", "distractors", "type", "rate", "95% CI", "k / n", "unknown"):
        table.add_column(col)
    for r in rows:
        assessed = r["n"] > 0
        table.add_row(
            Text(r["model"]),
            Text(r["judge"]),
            str(r["distractors"]),
            r["type"],
            fixed(r["rate"]) if assessed else "not assessed",
            _ci(r) if assessed else "–",
            f"{r['k']} / {r['n']}",
            str(r["unknown"]),
        )
    if rows:
        _out.print(table)
    for a in result.get("action_agreement") or []:
        _out.print(
            f"action class, {a['judge_a']} vs {a['judge_b']}: {a['n']} answers, same class "
            f"{fixed(a['exact'])}, Cohen's kappa {fixed(a['kappa'])} [{fixed(a['kappa_ci_low'])}, "
            f"{fixed(a['kappa_ci_high'])}]; same abstain reading {fixed(a['abstain_agreement'])}",
            markup=False,
        )
    for note in result.get("meta", {}).get("notes", []):
        if "action class" in note:
            _out.print(note, markup=False)
