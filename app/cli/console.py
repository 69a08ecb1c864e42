"""The CLI's Rich consoles: every piece of text is shown literally and safely.

:class:`SafeConsole` is a :class:`rich.console.Console` whose rendered text has its
control characters escaped (:func:`storage.safe_text.escape_control`), so stored model
output, imported questions or a file name cannot send terminal escape sequences (colour,
cursor moves, OSC 8 hyperlinks, screen clears) to the user's terminal. Rich's own styling
is unaffected: it is emitted from the segments' styles, not from their text.

Every command module builds its consoles here (:func:`out_console`, :func:`err_console`)
instead of calling ``Console(...)`` directly. Markup is off by default: a ``[bold]`` or
``[/]`` in user text stays text; pass :class:`rich.text.Text` for styled output.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment

from storage.safe_text import escape_control


def term(text: object) -> str:
    """Untrusted text for a line printed with markup on: no control characters, no markup."""
    s = "".join(
        ch if unicodedata.category(ch)[0] != "C" else "\N{REPLACEMENT CHARACTER}"
        for ch in str(text)
    )
    return escape(s)


class SafeConsole(Console):
    """A Rich console that escapes control characters in everything it renders."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Render as Rich does, then escape control characters in the text segments."""
        for segment in super().render(renderable, options):
            if segment.control or not segment.text or segment.text == "\n":
                yield segment
            else:
                text = escape_control(segment.text, keep_newlines=True)
                yield segment if text == segment.text else Segment(text, segment.style)


def out_console(**kwargs: Any) -> SafeConsole:
    """A console on stdout (markup and highlighting off unless asked for)."""
    kwargs.setdefault("highlight", False)
    kwargs.setdefault("markup", False)
    return SafeConsole(**kwargs)


def err_console(**kwargs: Any) -> SafeConsole:
    """A console on stderr (markup and highlighting off unless asked for)."""
    kwargs.setdefault("highlight", False)
    kwargs.setdefault("markup", False)
    return SafeConsole(stderr=True, **kwargs)


def fmt_p(x: float | None) -> str:
    """A p-value for a table cell: ``–`` when missing or not finite, ``<0.001`` below that.

    Args:
        x: The p-value, or ``None`` where none was computed.
    """
    if x is None or not math.isfinite(x):
        return "–"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def fmt_finite(x: float, digits: int = 3) -> str:
    """A statistic for a table cell: ``–`` when it is NaN or infinite (no estimate).

    Args:
        x: The value.
        digits: Places after the point.
    """
    return "–" if not math.isfinite(x) else f"{x:.{digits}f}"


def fmt_num(x: Any, digits: int = 2) -> str:
    """A number for a table cell: ``–`` when missing, a float to ``digits`` places.

    Args:
        x: The value; anything but a float or ``None`` is shown as ``str(x)``.
        digits: Places after the point of a float.
    """
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def fmt_measure(value: Any, digits: int = 3, unit: str = "") -> str:
    """A measure for a sentence or a cell: ``n/a`` when missing or NaN.

    Args:
        value: The number, or ``None``.
        digits: Places after the point.
        unit: Written right after the number (``"%"``).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}{unit}"
