"""Table columns and the number formatting the HTML and Markdown renderers share.

A table is a list of :class:`Column`: the data column, its header and the *kind* of cell
(a tag, not a formatter), so each renderer keeps only its own formatting: it maps the kind
to an HTML or Markdown cell (:func:`cells`). An HTML report shows every column; the
Markdown version is the compact one and shows only the columns marked ``markdown=True``
(under ``md_header`` where the plain-text header differs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: How a cell is shown: ``None`` the formatted value, else a tag that each renderer maps to
#: its own cell function (``passed``, ``p`` and ``fine`` are common to every report).
Kind = str | None

Cell = Callable[[Any], str]


@dataclass(frozen=True)
class Column:
    """One column of a report table.

    Attributes:
        column: the data frame column.
        header: the header shown.
        kind: how the cell is shown (see :data:`Kind`).
        markdown: whether the Markdown report shows this column too.
        md_header: the header in Markdown when it differs from ``header``.
    """

    column: str
    header: str
    kind: Kind = None
    markdown: bool = True
    md_header: str | None = None


def cells(
    columns: Sequence[Column], kinds: dict[str, Cell], *, markdown: bool = False
) -> list[tuple[str, str, Cell | None]]:
    """Turn columns into a renderer's ``(column, header, render)`` triples.

    Args:
        columns: the table's columns.
        kinds: the renderer's cell function per kind; a kind it does not list is shown as
            the formatted value.
        markdown: keep only the Markdown columns, under their Markdown headers.
    """
    return [
        (
            c.column,
            c.md_header if markdown and c.md_header is not None else c.header,
            kinds.get(c.kind) if c.kind is not None else None,
        )
        for c in columns
        if c.markdown or not markdown
    ]


def fmt(value: Any, digits: int = 3) -> str:
    """Format a number for a table cell; NaN and ``None`` become an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        return f"{value:.{digits}f}"
    return str(value)


def fmt_p(value: Any) -> str:
    """Format a p-value (``<0.001`` below the smallest shown value)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return "<0.001" if float(value) < 0.001 else f"{float(value):.3f}"


def pass_label(value: Any) -> str:
    """``pass``, ``FAIL`` or ``open`` (``None`` or NaN: inconclusive or not run; the detail
    says which) for a check result."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "open"
    return "pass" if bool(value) else "FAIL"
