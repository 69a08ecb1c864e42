"""The page registry: (file under ``app/pages``, title, icon) per section.

Pages from each capability plug in here; the router and the tests both read it. The
Instruments section comes from the instrument registry (:mod:`app.instruments`): in
:data:`SECTIONS` it holds the installed instruments' pages that live under ``app/pages``, and
:func:`sections` gives every instrument's page with its full path, wherever its package is.
"""

from __future__ import annotations

from pathlib import Path

from app.instruments import PAGES_DIR, SECTION, instrument_pages

# The shared pages, in the order of their sections; every instrument's pages are placed
# among them by :func:`sections` (the Instruments section, or the section a page names).
_SHARED: dict[str, list[tuple[str, str, str]]] = {
    "Workbench": [
        ("home.py", "Home", ":material/home:"),
        ("perturbations.py", "Perturbations", ":material/psychology:"),
        ("runs.py", "Runs", ":material/play_circle:"),
        ("compare.py", "Compare", ":material/compare_arrows:"),
        ("jobs.py", "Jobs", ":material/pending_actions:"),
        ("settings.py", "Settings", ":material/settings:"),
    ],
    "Ontology studio": [],
    SECTION: [],
    "Studies": [
        ("human_studies.py", "Human studies", ":material/how_to_reg:"),
    ],
}

DEFAULT_PAGE = "home.py"


def sections() -> dict[str, list[tuple[Path, str, str]]]:
    """Every section's pages as (script path, title, icon), registered instruments' included.

    An instrument's page goes to the section it names (the Instruments section when it names
    none), after the page it names there or at the end; a section left empty is not shown.
    """
    placed = {
        section: [(PAGES_DIR / file, title, icon) for file, title, icon in pages]
        for section, pages in _SHARED.items()
    }
    for page in instrument_pages():
        section = page.section or SECTION
        if section not in placed:  # a section of its own: before the studies
            placed = {
                **{k: v for k, v in placed.items() if k != "Studies"},
                section: [],
                "Studies": placed["Studies"],
            }
        entries = placed[section]
        at = next((k for k, e in enumerate(entries) if e[0].name == page.after), None)
        entries.insert(len(entries) if at is None else at + 1, (page.path, page.title, page.icon))
    return {section: pages for section, pages in placed.items() if pages}


#: The pages under ``app/pages`` by section (file, title, icon): what the page tests walk.
SECTIONS: dict[str, list[tuple[str, str, str]]] = {
    section: [(path.name, title, icon) for path, title, icon in pages if path.parent == PAGES_DIR]
    for section, pages in sections().items()
}
