"""Render untrusted text (model output, questions, annotations) as inert text.

Streamlit's markdown renders Markdown and, with ``unsafe_allow_html``, HTML. Untrusted text
must never take either path: it is backslash-escaped for Markdown (which also keeps ``<``
and ``&`` from starting a tag or an entity), HTML-escaped for our own HTML blocks, or shown
with ``st.text``/``st.code``/dataframes, which never interpret it.
"""

from __future__ import annotations

import html
import re

# CommonMark lets a backslash escape any ASCII punctuation; these are the characters that
# start Markdown syntax, an HTML tag (<) or entity (&), or one of Streamlit's own
# extensions (:emoji:/:red[...] directives, $LaTeX$).
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<&:$^=])")


def escape_markdown(text: str | None) -> str:
    """Backslash-escape ``text`` so ``st.markdown`` (and ``st.error`` etc.) show it literally.

    No HTML entities are produced: an apostrophe stays an apostrophe, and ``<b>`` or
    ``&amp;`` typed by a user is shown exactly as typed.
    """
    if not text:
        return ""
    return _MD_SPECIAL.sub(r"\\\1", text)


def escape_html(text: str | None) -> str:
    """Escape for inclusion in HTML we build ourselves (``unsafe_allow_html`` blocks)."""
    return html.escape(text or "", quote=True)


def inline_html(text: str | None) -> str:
    """Escape for one-line use inside an HTML block rendered with ``unsafe_allow_html``.

    Newlines become ``<br>``: a blank line would end the HTML block and let the rest be
    parsed as Markdown again.
    """
    return escape_html(text).replace("\r\n", "\n").replace("\n", "<br>")
