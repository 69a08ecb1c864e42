"""The front ends' view of the installed instruments: their command groups and pages.

Instruments are plugins (:mod:`driftlens_plugins`): each installed one is announced in the
``driftlens.instruments`` entry-point group, the built-in ones included. This module only
reads that registry for the CLI root (:func:`cli_modules`) and the page router
(:func:`instrument_pages`); it names no instrument. Adding one is a folder and an entry point
(``docs/adding-an-instrument.md``).
"""

from __future__ import annotations

from pathlib import Path

from driftlens_plugins import InstrumentPage, instruments

PAGES_DIR = Path(__file__).resolve().parent / "pages"
SECTION = "Instruments"

__all__ = ["PAGES_DIR", "SECTION", "cli_modules", "instrument_pages", "instruments"]


def cli_modules() -> tuple[str, ...]:
    """The command modules of every instrument, in listing order."""
    return tuple(m for i in instruments() for m in i.cli_modules)


def instrument_pages() -> tuple[InstrumentPage, ...]:
    """The pages of every instrument, in listing order."""
    return tuple(p for i in instruments() for p in i.pages)
