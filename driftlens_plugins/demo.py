"""What an instrument's part of ``driftlens demo`` hands back (``demo``).

The demo command calls every instrument's ``demo`` part in listing order and prints each
:class:`DemoOutcome`; the part runs its simulated study and says what it did, so the command
names no instrument. Every text here is plain (no console markup) and already made safe for
a terminal by the instrument: model output and names in it are untrusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: ``stage(name)`` gives a ``(done, total)`` progress callback for one stage of a demo; the
#: command draws a bar per stage and closes them when the demo returns.
Stage = Callable[[str], Callable[[int, int], None]]


@dataclass(frozen=True)
class DemoReport:
    """One file a demo wrote that the user should open next.

    Attributes:
        label: what it is, for the ``Next:`` list (``open the report``, ``memory conflicts``).
        path: the file (absolute).
    """

    label: str
    path: Path


@dataclass(frozen=True)
class DemoOutcome:
    """What one instrument's demo did, for the demo command to print.

    Attributes:
        title: the instrument's name in the output (its plugin title).
        simulated: every answer came from the built-in simulator; the command prints the
            SIMULATED DATA banner before ``lines``.
        banner: the rest of that banner's line (``every response comes from ...``).
        lines: the summary, one printed line each (a table already rendered as lines).
        seconds: ``(stage, seconds)`` in order, for the command's "Time per stage" line.
        reports: the files to open next, in order.
        next_lines: further ``(label, text)`` lines for the ``Next:`` list (a command to run).
        footer: lines printed after every demo's summary, before ``Next:`` (the model and
            the core implementation used).
    """

    title: str
    simulated: bool = True
    banner: str = ""
    lines: tuple[str, ...] = ()
    seconds: tuple[tuple[str, float], ...] = ()
    reports: tuple[DemoReport, ...] = ()
    next_lines: tuple[tuple[str, str], ...] = ()
    footer: tuple[str, ...] = ()
