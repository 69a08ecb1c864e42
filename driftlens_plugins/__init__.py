"""Instrument plugins: the one shape every instrument has, and the registry that finds them.

An instrument (reasoning drift, memory conflicts, disposition drift, source reliance, or one
from another package) is one :class:`~driftlens_plugins.instrument.InstrumentPlugin` object,
announced in the ``driftlens.instruments`` entry-point group
(:data:`~driftlens_plugins.registry.ENTRY_POINT_GROUP`). The built-in instruments are
registered exactly as an outside package would be: by entry points in ``pyproject.toml``.

The rooms every instrument shares (``annotation``, ``llm``, ``study``'s shared sub-packages,
the page router, the CLI root) read :func:`~driftlens_plugins.registry.instruments` and never
name an instrument. This package imports nothing of ours but the error family in
``storage.errors``, so every room may use it.
"""

from driftlens_plugins.demo import DemoOutcome, DemoReport, Stage
from driftlens_plugins.instrument import (
    InstrumentPage,
    InstrumentPlugin,
    PresetListing,
    ResultPage,
    load_ref,
)
from driftlens_plugins.kit import KitJudge, RunOutcome, StudyKit
from driftlens_plugins.registry import ENTRY_POINT_GROUP, get_instrument, instruments
from driftlens_plugins.run_listing import RunLine

__all__ = [
    "ENTRY_POINT_GROUP",
    "DemoOutcome",
    "DemoReport",
    "InstrumentPage",
    "InstrumentPlugin",
    "KitJudge",
    "PresetListing",
    "ResultPage",
    "RunLine",
    "RunOutcome",
    "Stage",
    "StudyKit",
    "get_instrument",
    "instruments",
    "load_ref",
]
