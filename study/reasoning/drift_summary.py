"""Reasoning drift's summary of one analysis as plain text: the tier table and verdicts.

``driftlens analyze`` draws the rows as a Rich table, ``driftlens demo`` prints them as
aligned text lines (:func:`tier_table_lines`); both read the cells from here. Every cell is
plain text (no console markup) with its control characters written out, since a model or
metric name can be anyone's text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from storage.safe_text import escape_control

if TYPE_CHECKING:
    from study.reasoning.analysis import AnalysisResult

#: The tier table's columns after the model column (left-aligned: the first two).
TIER_COLUMNS = ("metric", "class", "conditions", "mean drift", "mean d_rel", "above floor")
#: Columns aligned left; every other one holds a number and is aligned right.
TEXT_COLUMNS = ("model", "metric", "class")


def fmt(x: object, digits: int = 3) -> str:
    """A cell: a float to ``digits`` places (``–`` when not finite), anything else as text."""
    if isinstance(x, float):
        return f"{x:.{digits}f}" if math.isfinite(x) else "–"
    return str(x)


def _cell(x: object) -> str:
    return escape_control(fmt(x))


def tier_rows(
    result: AnalysisResult, *, show_model: bool = True
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The drift tiers (mean drift per class and metric): ``(columns, rows)`` of text.

    Args:
        result: a stored analysis.
        show_model: keep the model column (drop it when there is only one model).
    """
    columns = ("model",) * show_model + TIER_COLUMNS
    rows = []
    for rec in result.tables.tiers.to_dict(orient="records"):
        cells = [
            _cell(rec["metric"]),
            _cell(rec["class"]),
            _cell(rec["conditions"]),
            _cell(rec["mean_drift"]),
            _cell(rec["mean_d_rel"]),
            _cell(rec["above_floor"]),
        ]
        rows.append(tuple([_cell(rec["model"])] * show_model + cells))
    return columns, rows


def validity_lines(result: AnalysisResult, *, show_model: bool = True) -> list[str]:
    """One line per validity check: ``[model · ]metric · check: pass|FAIL|open — detail``."""
    lines = []
    for rec in result.tables.validity.to_dict(orient="records"):
        verdict = {True: "pass", False: "FAIL"}.get(rec["passed"], "open")
        where = f"{_cell(rec['model'])} · " if show_model else ""
        lines.append(
            f"  {where}{_cell(rec['metric'])} · {_cell(rec['check'])}: "
            f"{verdict} — {_cell(rec['detail'])}"
        )
    return lines


def tier_table_lines(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]
) -> list[str]:
    """A table as aligned text lines: the title, the header, a rule, then one line per row."""
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(w) if col in TEXT_COLUMNS else cell.rjust(w)
            for cell, w, col in zip(cells, widths, columns, strict=True)
        ).rstrip()

    return [title, line(columns), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
