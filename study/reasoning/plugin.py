"""Reasoning drift as a plugin (entry point ``reasoning`` in ``pyproject.toml``).

Its pages are in the Workbench and Ontology studio sections and its commands (generate,
label, analyze, judge) among the CLI's generic ones, so it brings no page or command group
of its own here.
"""

from driftlens_plugins import InstrumentPlugin, ResultPage

PLUGIN = InstrumentPlugin(
    name="reasoning",
    title="Reasoning drift",
    order=10,
    sim_module="study.reasoning.sim",
    human_module="study.reasoning.human",
    compare_module="study.reasoning.compare",
    result_pages=(
        ResultPage("generate", "runs.py", "run"),
        ResultPage("label", "runs.py", "run"),
        ResultPage("analyze", "analysis.py", "analysis"),
    ),
    robustness="study.reasoning.labeler_robustness:run_robustness",
    sim_server="study.reasoning.sim.served:server_parts",
    tier_impact="study.reasoning.tier_impact:tier_impact",
    jobs="study.reasoning.jobs:JOBS",
    study_kit="study.reasoning.kit:study_kit",
    sim_presets="study.reasoning.sim.presets:preset_listing",
)
