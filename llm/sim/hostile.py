"""Hostile text for simulated models whose answers must stay inert wherever they are shown.

An instrument's hostile simulator preset puts :data:`HOSTILE_TEXT` into its answers, so the
instrument checks (``app/instrument_checks``) can show that its report, its downloads and
the terminal keep it text: a CSV formula start, a terminal colour escape and bell, Markdown
table pipes and a backtick, HTML with a script, and a right-to-left override.
"""

from __future__ import annotations

HOSTILE_TEXT = "=1+1 ev\x1b[31mil\x07 |a|b| `t` <b>bold</b><script>alert(1)</script> \u202e"
#: Words of :data:`HOSTILE_TEXT` that stay visible once its control characters are written
#: out and its tags shown as text: a check finds them where the answer was printed.
HOSTILE_VISIBLE: tuple[str, ...] = ("<b>bold</b>", "alert(1)")
