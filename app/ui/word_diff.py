"""Highlighted word diffs for the ontology pages (text is escaped before any markup)."""

from __future__ import annotations

import streamlit as st

from app.ui.safe import escape_markdown, inline_html
from ontology.diff import OntologyDiff, word_diff

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


def show_word_diff(diff: OntologyDiff) -> None:
    """Every changed node of ``diff``, each changed field old | new with its words marked.

    Names are escaped Markdown and field text goes through :func:`diff_html`, so nothing
    from an ontology document becomes live markup.
    """
    for change in diff.changes:
        st.markdown(
            f"**{escape_markdown(change.root)} / {escape_markdown(change.name)}** — {change.status}"
        )
        for f in change.fields:
            a, b = st.columns(2)
            old_text = f.old if isinstance(f.old, str) else ", ".join(f.old)
            new_text = f.new if isinstance(f.new, str) else ", ".join(f.new)
            a.caption(f"{f.field} (old)")
            a.markdown(diff_html(old_text, new_text, side="old"), unsafe_allow_html=True)
            b.caption(f"{f.field} (new)")
            b.markdown(diff_html(old_text, new_text, side="new"), unsafe_allow_html=True)
