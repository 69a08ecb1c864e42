"""Render untrusted text (model output, questions, annotations) as inert text.

Streamlit's markdown renders Markdown and, with ``unsafe_allow_html``, HTML. Untrusted text
must never take either path: it is HTML-escaped and Markdown-escaped, or shown with
``st.text``/``st.code``/dataframes, which never interpret it.
"""

from __future__ import annotations

import html
import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<])")


def escape_markdown(text: str | None) -> str:
    """Escape Markdown and HTML so ``st.markdown`` shows ``text`` literally."""
    if not text:
        return ""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=True))


def escape_html(text: str | None) -> str:
    """Escape for inclusion in HTML we build ourselves (``unsafe_allow_html`` blocks)."""
    return html.escape(text or "", quote=True)


def inline_html(text: str | None) -> str:
    """Escape for one-line use inside an HTML block rendered with ``unsafe_allow_html``.

    Newlines become ``<br>``: a blank line would end the HTML block and let the rest be
    parsed as Markdown again.
    """
    return escape_html(text).replace("\r\n", "\n").replace("\n", "<br>")
