"""Markdown for every report: escaping, tables and fenced JSON.

Untrusted text stays text: every string a report did not write itself goes through
:func:`md_escape`, which first HTML-escapes it (so no raw HTML passes through a Markdown
renderer) and then backslash-escapes Markdown syntax (so a question cannot become a link,
an image, a heading or a table column).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from storage.safe_text import escape_control
from study.report.cells import Cell, fmt

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>])")


def md_escape(value: object) -> str:
    """Escape any value so a Markdown renderer shows it literally, on one line."""
    text = " ".join(("" if value is None else str(value)).split())
    # Terminal escape sequences (a report.md is often read with cat or less) become visible.
    text = escape_control(text)
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def _cell(value: Any, render: Cell | None) -> str:
    if render is not None:
        return md_escape(render(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Our own number formatting (digits, ".", "-", "–"): nothing to escape inside a
        # table cell, and unescaped numbers keep the Markdown source readable.
        return fmt(value)
    return md_escape(fmt(value))


def md_table(df: pd.DataFrame, columns: Sequence[tuple[str, str, Cell | None]]) -> str:
    """Render ``df`` as a GitHub-flavoured Markdown table (every cell escaped).

    Args:
        df: the rows.
        columns: ``(column, header, render)``; ``render`` formats the value (its result is
            escaped too); ``None`` means :func:`~study.report.html.fmt`.
    """
    if df.empty:
        return "_No rows._\n"
    lines = [
        "| " + " | ".join(md_escape(h) for _, h, _ in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for rec in df.to_dict(orient="records"):
        cells = [_cell(rec.get(c), render) for c, _, render in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def code_json(value: Any) -> str:
    """A value as indented JSON in a fenced block that no text inside can close."""
    # Fenced code is shown literally, but <, > and & are still written as JSON \u escapes
    # (the same JSON value) so no raw markup appears in the file at all. The fence is
    # longer than any backtick run in the text, so the value cannot close it.
    text = json.dumps(value, indent=2, sort_keys=True, default=str)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}json\n{text}\n{fence}\n"
