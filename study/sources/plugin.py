"""Source reliance as a plugin (entry point ``sources`` in ``pyproject.toml``)."""

from driftlens_plugins import InstrumentPage, InstrumentPlugin

PLUGIN = InstrumentPlugin(
    name="sources",
    title="Source reliance",
    order=40,
    cli_modules=("app.cli.sources_cmds",),
    pages=(InstrumentPage("app.pages.sources", "Source reliance", ":material/fact_check:"),),
    sim_module="study.sources.sim",
    human_module="study.sources.human",
    compare_module="study.sources.compare",
    cli_demo="app.cli.sources_cmds:run_sources_demo_cli",
    jobs="study.sources.jobs:JOBS",
    study_kit="study.sources.kit:study_kit",
    sim_presets="study.sources.sim.probe:preset_listing",
    run_listing="study.sources.run_listing:run_lines",
)
