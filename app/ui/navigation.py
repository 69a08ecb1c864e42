"""The page registry: (file under ``app/pages``, title, icon) per section.

Pages from each capability plug in here; the router and the tests both read it. The
Instruments section comes from the instrument registry (:mod:`app.instruments`): in
:data:`SECTIONS` it holds the installed instruments' pages that live under ``app/pages``, and
:func:`sections` gives every instrument's page with its full path, wherever its package is.
"""

from __future__ import annotations

from pathlib import Path

from app.instruments import PAGES_DIR, SECTION, instrument_pages

SECTIONS: dict[str, list[tuple[str, str, str]]] = {
    "Workbench": [
        ("home.py", "Home", ":material/home:"),
        ("benchmark.py", "Benchmark", ":material/quiz:"),
        ("perturbations.py", "Perturbations", ":material/psychology:"),
        ("runs.py", "Runs", ":material/play_circle:"),
        ("analysis.py", "Analysis", ":material/analytics:"),
        ("compare.py", "Compare", ":material/compare_arrows:"),
        ("jobs.py", "Jobs", ":material/pending_actions:"),
        ("settings.py", "Settings", ":material/settings:"),
    ],
    "Ontology studio": [
        ("ontology_versions.py", "Ontology", ":material/account_tree:"),
        ("ontology_rounds.py", "Rounds", ":material/groups:"),
        ("ontology_rewrite.py", "Rewrite", ":material/edit_note:"),
        ("ontology_refinement.py", "Refinement", ":material/autorenew:"),
        ("ontology_validation.py", "Validation", ":material/verified:"),
    ],
    SECTION: [
        (p.path.name, p.title, p.icon) for p in instrument_pages() if p.path.parent == PAGES_DIR
    ],
    "Studies": [
        ("human_studies.py", "Human studies", ":material/how_to_reg:"),
    ],
}

DEFAULT_PAGE = "home.py"


def sections() -> dict[str, list[tuple[Path, str, str]]]:
    """Every section's pages as (script path, title, icon), registered instruments' included."""
    out = {
        section: [(PAGES_DIR / file, title, icon) for file, title, icon in pages]
        for section, pages in SECTIONS.items()
        if section != SECTION
    }
    instruments = [(p.path, p.title, p.icon) for p in instrument_pages()]
    # the Instruments section keeps its place among the others
    ordered: dict[str, list[tuple[Path, str, str]]] = {}
    for section in SECTIONS:
        ordered[section] = instruments if section == SECTION else out[section]
    return ordered
