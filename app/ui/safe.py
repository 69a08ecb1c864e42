"""Render untrusted text (model output, questions, annotations) as inert text.

Streamlit's markdown renders Markdown and, with ``unsafe_allow_html``, HTML. Untrusted text
must never take either path: it is backslash-escaped for Markdown (which also keeps ``<``
and ``&`` from starting a tag or an entity), HTML-escaped for our own HTML blocks, or shown
with ``st.text``/``st.code``/dataframes, which never interpret it.

Messages (an exception's text, a stored error, a warning that echoes typed input or model
text) are shown only through :func:`show_plain`: secrets in URLs redacted, control
characters made visible, Markdown inert. ``tests/app/test_page_messages.py`` scans the pages
for any other way of rendering an exception.
"""

from __future__ import annotations

import html
import re
from typing import Literal

from storage.safe_text import escape_control, redact_secrets

#: The Streamlit alert boxes :func:`show_plain` can use.
MessageKind = Literal["error", "warning", "info", "success"]

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


def plain_message(message: object) -> str:
    """A message as inert Markdown on one line: secrets redacted, controls visible.

    Args:
        message: an exception (its text; its class name when the text is empty) or any text.
    """
    text = str(message)
    if not text and isinstance(message, BaseException):
        text = type(message).__name__
    return escape_markdown(escape_control(redact_secrets(text)))


def show_plain(message: object, *, kind: MessageKind = "error") -> None:
    """Show an exception or an untrusted message in an alert box, as plain text.

    The one way pages render exception text, stored errors and messages that echo input
    or model text: ``st.error(str(exc))`` would render ``**x**`` bold and ``[a](b)`` as a
    link, print a key in a URL and pass terminal escapes through.

    Args:
        message: the exception or text (see :func:`plain_message`).
        kind: the alert box: ``error``, ``warning``, ``info`` or ``success``.
    """
    import streamlit as st

    show = {"error": st.error, "warning": st.warning, "info": st.info, "success": st.success}
    show[kind](plain_message(message))
