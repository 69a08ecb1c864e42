"""Disposition drift as a plugin (entry point ``disposition`` in ``pyproject.toml``)."""

from driftlens_plugins import InstrumentPage, InstrumentPlugin

PLUGIN = InstrumentPlugin(
    name="disposition",
    title="Disposition drift",
    order=30,
    cli_modules=("app.cli.disposition_cmds",),
    pages=(
        InstrumentPage("app.pages.disposition", "Disposition drift", ":material/trending_down:"),
    ),
    sim_module="study.disposition.sim",
    human_module="study.disposition.human",
    compare_module="study.disposition.compare",
    robustness="study.disposition.robustness:run_robustness",
    cli_demo="app.cli.disposition_cmds:run_disposition_demo_cli",
    jobs="study.disposition.jobs:JOBS",
    study_kit="study.disposition.kit:study_kit",
    sim_presets="study.disposition.sim.model:preset_listing",
    run_listing="study.disposition.run_listing:run_lines",
)
