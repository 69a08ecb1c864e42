"""What an instrument shows of its stored runs on the shared Runs page (``run_listing``).

Each instrument stores its runs in its own tables (or the generic instrument store); its
``run_listing`` part reads them into :class:`RunLine` rows, and the Runs page shows one table
per instrument from those rows alone, so the page names no instrument.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunLine:
    """One stored run of an instrument, as the Runs page lists it.

    Attributes:
        name: the run's name (untrusted text: the page shows it as a table cell).
        model: the model spec it ran (several joined by ``", "``).
        created: when it was created, UTC, ``YYYY-MM-DD HH:MM``.
        status: its stored status (``done``, ``interrupted``, ``pending``, ...).
        simulated: its answers came from the built-in simulator.
        details: the instrument's own columns in order, ``(column, value)``: its counts
            (``("probes", 52)``) or a setting; every line of one instrument names the same
            columns.
        page: the module of the page that shows the run (``app.pages.sources``, the form of
            :attr:`~driftlens_plugins.instrument.InstrumentPage.module`); ``None``: no page
            shows one run.
        query: the query parameters that open the run on that page (``(("run", name),)``).
    """

    name: str
    model: str
    created: str
    status: str
    simulated: bool
    details: tuple[tuple[str, int | str], ...] = ()
    page: str | None = None
    query: tuple[tuple[str, str], ...] = ()
