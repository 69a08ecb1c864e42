"""Highlighted word diffs for the ontology pages (text is escaped before any markup)."""

from __future__ import annotations

from app.ui.safe import inline_html
from ontology.diff import word_diff

_STYLE = {
    "delete": "background:#ffd7d5;text-decoration:line-through;",
    "insert": "background:#ccffd8;",
}


def diff_html(old: str, new: str, *, side: str) -> str:
    """HTML of one side of a word diff: ``side="old"`` marks deletions, ``"new"`` insertions.

    Every piece of text is HTML-escaped; only our own ``<span>`` tags are markup.
    """
    keep = "delete" if side == "old" else "insert"
    parts = []
    for op, text in word_diff(old, new):
        if op == "equal":
            parts.append(inline_html(text))
        elif op == keep:
            parts.append(f'<span style="{_STYLE[op]}">{inline_html(text)}</span>')
    body = " ".join(parts)
    return f'<div style="white-space:pre-wrap;line-height:1.5">{body}</div>'
