"""The registry of comparison adapters: one per instrument that can be compared.

An adapter lives in its instrument's folder (the plugin's ``compare_module``,
:class:`~driftlens_plugins.instrument.InstrumentPlugin`) and registers itself with
:func:`register_adapter` when imported. The registry imports an instrument's module on the
first lookup of its name; it never names an instrument.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol

from sqlmodel import Session

from driftlens_plugins.registry import instruments
from storage.errors import InputError
from study.compare.types import CompareOptions, ItemDiff, RunData, StatRow


class Adapter(Protocol):
    """What an instrument provides to be compared.

    Attributes:
        name: the ``--instrument`` value.
        headline: one line naming the compared quantity (shown in reports).
        default_margin: equivalence margin in the statistic's units (TOST), or ``None``
            to use each comparison's own MDD.
        revision_tables: the tables (SQLModel classes with an ``id``) its runs are read
            from: a new or deleted row in any of them changes
            :func:`study.compare.service.data_revision`, so a page never shows a stale
            comparison.
    """

    name: str
    headline: str
    default_margin: float | None
    revision_tables: tuple[type, ...]

    def list_runs(self, *, session: Session) -> list[str]:
        """The names of the runs that can be compared (what the Compare page offers)."""
        ...

    def labelers(self, *, session: Session) -> list[str] | None:
        """The labelers its runs may be compared under (the Compare page offers them), or
        ``None`` when its runs are not compared under a labeler."""
        ...

    def load(self, run: str, *, session: Session, options: CompareOptions) -> RunData:
        """Read one run (raise a ``DriftLensError`` naming it when it cannot be read)."""
        ...

    def pair(
        self, a: RunData, b: RunData, shared: Sequence[str], *, options: CompareOptions,
        margin: float | None,
    ) -> list[StatRow]:  # fmt: skip
        """The paired rows of two runs on their shared items (unadjusted)."""
        ...

    def items(self, a: RunData, b: RunData, shared: Sequence[str], *, top: int) -> list[ItemDiff]:
        """The ``top`` shared items on which the runs differ most, with both texts."""
        ...

    def unpaired_units(self, a: RunData, b: RunData, shared: Sequence[str]) -> int:
        """Answers of shared items that have no partner in the other run (left out)."""
        ...


_ADAPTERS: dict[str, Adapter] = {}


def register_adapter(adapter: Adapter) -> Adapter:
    """Register ``adapter`` under its name (a second registration replaces the first)."""
    _ADAPTERS[adapter.name] = adapter
    return adapter


def _adapter_modules() -> dict[str, str]:
    """Instrument name → the module that registers its adapter when imported."""
    return {p.name: p.compare_module for p in instruments() if p.compare_module is not None}


def adapter_names() -> tuple[str, ...]:
    """Every instrument that can be compared, in the instruments' listing order."""
    return tuple(dict.fromkeys([*_adapter_modules(), *_ADAPTERS]))


def get_adapter(name: str) -> Adapter:
    """The adapter of instrument ``name``.

    Raises:
        InputError: no instrument of that name.
    """
    modules = _adapter_modules()
    if name not in _ADAPTERS and name in modules:
        importlib.import_module(modules[name])
    if name not in _ADAPTERS:
        raise InputError(f"Unknown instrument {name!r}; use one of {', '.join(adapter_names())}.")
    return _ADAPTERS[name]
