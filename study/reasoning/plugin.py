"""Reasoning drift as a plugin (entry point ``reasoning`` in ``pyproject.toml``).

Its pages are placed in the Workbench section (Benchmark after Home, Analysis after Runs)
and make up the Ontology studio (the value ontology its step labels are read against, refined
on its runs); its commands (generate, label, analyze, stats, judge,
export) are its CLI modules, registered after the generic ones like every instrument's. On
the shared Runs page it lists its runs and draws its launch form and run browser (its
``run_listing`` and ``runs_panel``); its demo is the whole pipeline, first in
``driftlens demo`` (``cli_demo``).
"""

from driftlens_plugins import InstrumentPage, InstrumentPlugin, ResultPage

_ONTOLOGY = "Ontology studio"

PLUGIN = InstrumentPlugin(
    name="reasoning",
    title="Reasoning drift",
    order=10,
    cli_modules=(
        "app.cli.questions_cmds",
        "app.cli.ontology_cmds",
        "app.cli.generate_cmds",
        "app.cli.label_cmds",
        "app.cli.analyze_cmds",
        "app.cli.stats_cmds",
        "app.cli.judge_cmds",
        "app.cli.export_cmds",
        "app.cli.show_cmds",
    ),
    pages=(
        InstrumentPage(
            "app.pages.benchmark",
            "Benchmark",
            ":material/quiz:",
            section="Workbench",
            after="home.py",
        ),
        InstrumentPage(
            "app.pages.analysis",
            "Analysis",
            ":material/analytics:",
            section="Workbench",
            after="runs.py",
        ),
        InstrumentPage(
            "app.pages.ontology_versions", "Ontology", ":material/account_tree:", section=_ONTOLOGY
        ),
        InstrumentPage(
            "app.pages.ontology_rounds", "Rounds", ":material/groups:", section=_ONTOLOGY
        ),
        InstrumentPage(
            "app.pages.ontology_rewrite", "Rewrite", ":material/edit_note:", section=_ONTOLOGY
        ),
        InstrumentPage(
            "app.pages.ontology_refinement", "Refinement", ":material/autorenew:", section=_ONTOLOGY
        ),
        InstrumentPage(
            "app.pages.ontology_validation", "Validation", ":material/verified:", section=_ONTOLOGY
        ),
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
