"""A new ontology version with one leaf reworded (the tests that need newer work than @1)."""

from __future__ import annotations

from sqlmodel import Session

from ontology.versions import document, edit_leaf, get_version
from storage.models import OntologyVersion


def reword_leaf(
    session: Session, definition: str, *, leaf: str | None = None, index: int = 0
) -> OntologyVersion:
    """Save the newest ``driftlens`` version with one leaf's definition replaced.

    Args:
        session: The workspace's session (not committed here).
        definition: The leaf's new definition; its triggers and exclusions are kept.
        leaf: The leaf's name; without it, the ``index``-th leaf.
        index: Which leaf, in the version's order, when ``leaf`` is not given.

    Returns:
        The new version.
    """
    base = get_version("driftlens", session=session)
    doc = document(base)
    found = doc.leaf(leaf if leaf is not None else doc.leaf_names[index])
    return edit_leaf(
        base,
        found.name,
        definition=definition,
        triggers=list(found.triggers),
        exclusions=list(found.exclusions),
        session=session,
    )
