"""Memory conflicts as a plugin (entry point ``conflicts`` in ``pyproject.toml``)."""

from driftlens_plugins import InstrumentPage, InstrumentPlugin

PLUGIN = InstrumentPlugin(
    name="conflicts",
    title="Memory conflicts",
    order=20,
    cli_modules=("app.cli.conflicts_cmds",),
    pages=(InstrumentPage("app.pages.conflicts", "Memory conflicts", ":material/call_split:"),),
    sim_module="study.conflicts.sim",
    human_module="study.conflicts.human",
    compare_module="study.conflicts.compare",
    robustness="study.conflicts.robustness:run_robustness",
    cli_demo="app.cli.conflicts_cmds:run_conflicts_demo_cli",
    sim_server="study.conflicts.sim.served:server_parts",
    jobs="study.conflicts.jobs:JOBS",
    study_kit="study.conflicts.kit:study_kit",
    run_listing="study.conflicts.run_listing:run_lines",
)
