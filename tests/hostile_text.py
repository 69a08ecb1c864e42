"""Hostile text for report tests, and the checks that it stayed inert (shared by instruments).

The text carries a terminal escape (colour + bell), a right-to-left override, Markdown
table pipes, backticks, HTML and a Markdown link: everything that could break a table,
start code, inject markup or rewrite what a reader sees in ``cat report.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

HOSTILE = "ev\x1b[31mil\x07 |a|b| `tick` <b>bold</b><script>alert(1)</script> [x](http://e) \u202e"

# every control character escape_control escapes, except the newline of a text file
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_PIPE = re.compile(r"(?<!\\)\|")
_TICK = re.compile(r"(?<!\\)`")


def assert_inert_markdown(md: str) -> None:
    """The Markdown shows the hostile text literally and nothing of it acts."""
    assert not _CONTROL.search(md), "a raw control character reached the Markdown"
    assert "\\\\x1b" in md, "the escape is shown visibly (as \\x1b)"
    assert "<b>" not in md and "<script" not in md.lower()
    assert "](http://e)" not in md, "the link stays text"
    assert not _TICK.search(md), "a raw backtick would start inline code"
    block: list[str] = []
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            counts = {len(_PIPE.findall(row)) for row in block}
            assert len(counts) == 1, f"a cell added table columns: {block}"
        block = []


def assert_inert_html(page: str) -> None:
    """The HTML shows the hostile text escaped: no tag of it survives."""
    assert "<script" not in page.lower() and "<b>bold" not in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page


def assert_no_control_in(files: Iterable[Path]) -> None:
    """No raw control character in text files such as SVG figures (invalid XML)."""
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not _CONTROL.search(text.replace("\t", "").replace("\r", "")), path
