"""Reasoning drift as a plugin (entry point ``reasoning`` in ``pyproject.toml``).

Its pages are in the Workbench and Ontology studio sections (the main job's pages), so it
brings no page of its own here; its commands (generate, label, analyze, stats, judge,
export) are its CLI modules, registered after the generic ones like every instrument's. On
the shared Runs page it lists its runs and draws its launch form and run browser (its
``run_listing`` and ``runs_panel``); its demo is the whole pipeline, first in
``driftlens demo`` (``cli_demo``).
"""

from driftlens_plugins import InstrumentPlugin, ResultPage

PLUGIN = InstrumentPlugin(
    name="reasoning",
    title="Reasoning drift",
    order=10,
    cli_modules=(
        "app.cli.generate_cmds",
        "app.cli.label_cmds",
        "app.cli.analyze_cmds",
        "app.cli.stats_cmds",
        "app.cli.judge_cmds",
        "app.cli.export_cmds",
        "app.cli.show_cmds",
    ),
    sim_module="study.reasoning.sim",
    human_module="study.reasoning.human",
    compare_module="study.reasoning.compare",
    result_pages=(
        ResultPage("generate", "runs.py", "run"),
        ResultPage("label", "runs.py", "run"),
        ResultPage("analyze", "analysis.py", "analysis"),
    ),
    robustness="study.reasoning.robustness:run_robustness",
    sim_server="study.reasoning.sim.served:server_parts",
    tier_impact="study.reasoning.tier_impact:tier_impact",
    jobs="study.reasoning.jobs:JOBS",
    study_kit="study.reasoning.kit:study_kit",
    sim_presets="study.reasoning.sim.presets:preset_listing",
    run_listing="study.reasoning.run_listing:run_lines",
    cli_demo="study.reasoning.demo_outcome:demo",
    runs_panel="app.pages.reasoning_runs:runs_panel",
)
