"""The toy instrument's plugin object: the one thing its entry point names."""

from __future__ import annotations

from driftlens_plugins import InstrumentPage, InstrumentPlugin

PLUGIN = InstrumentPlugin(
    name="toy",
    title="Coin (toy)",
    cli_modules=("tests.toy_instrument.cli",),
    pages=(InstrumentPage("tests.toy_instrument.page", "Coin (toy)", ":material/toll:"),),
    sim_module="tests.toy_instrument.sim",
    human_module="tests.toy_instrument.human",
    compare_module="tests.toy_instrument.compare",
    jobs="tests.toy_instrument.jobs:JOBS",
    study_kit="tests.toy_instrument.kit:study_kit",
    run_listing="tests.toy_instrument.run_listing:run_lines",
    runs_panel="tests.toy_instrument.runs_panel:runs_panel",
    cli_demo="tests.toy_instrument.demo:demo",
)

#: The entry point an outside package would put in its ``pyproject.toml``, under
#: ``[project.entry-points."driftlens.instruments"]``:
#: ``toy = "tests.toy_instrument.plugin:PLUGIN"``.
ENTRY_POINT = ("toy", "tests.toy_instrument.plugin:PLUGIN")
