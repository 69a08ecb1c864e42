"""The page registry: (file under ``app/pages``, title, icon) per section.

Pages from each capability plug in here; the router and the tests both read it.
"""

from __future__ import annotations

SECTIONS: dict[str, list[tuple[str, str, str]]] = {
    "Workbench": [
        ("home.py", "Home", ":material/home:"),
        ("benchmark.py", "Benchmark", ":material/quiz:"),
        ("perturbations.py", "Perturbations", ":material/psychology:"),
        ("runs.py", "Runs", ":material/play_circle:"),
        ("analysis.py", "Analysis", ":material/analytics:"),
        ("compare.py", "Compare", ":material/compare_arrows:"),
        ("settings.py", "Settings", ":material/settings:"),
    ],
    "Ontology studio": [
        ("ontology_versions.py", "Ontology", ":material/account_tree:"),
        ("ontology_rounds.py", "Rounds", ":material/groups:"),
        ("ontology_rewrite.py", "Rewrite", ":material/edit_note:"),
        ("ontology_validation.py", "Validation", ":material/verified:"),
    ],
    "Instruments": [
        ("conflicts.py", "Memory conflicts", ":material/call_split:"),
        ("disposition.py", "Disposition drift", ":material/trending_down:"),
        ("sources.py", "Source reliance", ":material/fact_check:"),
    ],
    "Studies": [
        ("human_studies.py", "Human studies", ":material/how_to_reg:"),
    ],
}

DEFAULT_PAGE = "home.py"
