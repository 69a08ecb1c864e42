"""Untrusted text helpers keep model output inert in Streamlit Markdown and HTML blocks."""

from __future__ import annotations

import re

from app.ui.safe import escape_markdown, inline_html
from app.ui.word_diff import diff_html

PROBE = "<img src=x onerror=alert(1)>"


def test_escape_markdown_neutralises_html_and_markdown() -> None:
    out = escape_markdown(f"{PROBE} [x](javascript:alert(1)) **bold**")
    assert "\\<img" in out and "<img" not in out.replace("\\<", "")  # no tag can start
    assert "\\[x\\]\\(javascript\\:" in out and "\\*\\*bold" in out


def test_escape_markdown_produces_no_html_entities() -> None:
    # Markdown shows a backslash-escaped character as itself: no &#x27; on the page.
    out = escape_markdown('It\'s "quoted" & <b>x</b> &amp; :red[y] $x$')
    assert "&#" not in out and "&quot;" not in out and "&amp;amp;" not in out
    assert "It's" in out and "\\&amp;" in out and "\\:red\\[y\\]" in out and "\\$x\\$" in out
    assert re.sub(r"\\(.)", r"\1", out) == 'It\'s "quoted" & <b>x</b> &amp; :red[y] $x$'


def test_inline_html_never_ends_the_html_block() -> None:
    out = inline_html(f"first\n\n[x](javascript:alert(1))\r\n{PROBE}")
    assert "\n" not in out and out.count("<br>") == 3
    assert "&lt;img src=x onerror=alert(1)&gt;" in out and PROBE not in out


def test_word_diff_html_escapes_both_sides_and_keeps_one_block() -> None:
    html = diff_html("old text", f"new\n\n{PROBE} text", side="new")
    assert PROBE not in html and "&lt;img" in html and "\n\n" not in html
