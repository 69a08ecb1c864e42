"""A toy fifth instrument, written only under ``tests/`` (docs/adding-an-instrument.md).

"Coin" asks a model yes/no questions and measures the share of yes answers. It has the
shape of every instrument — items, plan, score, analysis, report, a human study kind, a
simulator preset, a CLI group and a page — and plugs into the workbench through the
registries alone: importing this package registers it (:func:`register`), and nothing
outside ``tests/`` names it.
"""

from __future__ import annotations

from pathlib import Path

from app.instruments import Instrument, InstrumentPage, register_instrument

HERE = Path(__file__).resolve().parent
INSTRUMENT = Instrument(
    name="toy",
    title="Coin (toy)",
    cli_modules=("tests.toy_instrument.cli",),
    pages=(InstrumentPage(HERE / "page.py", "Coin (toy)", ":material/toll:"),),
    sim_module="tests.toy_instrument.sim",
    human_module="tests.toy_instrument.human",
)


def register() -> None:
    """Register the toy instrument (again: a no-op that replaces it)."""
    register_instrument(INSTRUMENT)


register()
