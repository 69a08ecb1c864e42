"""A new ontology version with one leaf reworded (the tests that need newer work than @1)."""

from __future__ import annotations

from sqlmodel import Session

from ontology.versions import document, edit_leaf, get_version
from storage.models import OntologyVersion


def reword_leaf(
    session: Session,
    definition: str,
    *,
    leaf: str | None = None,
    index: int = 0,
    base: str = "driftlens",
) -> OntologyVersion:
    """Save a version (by default the newest ``driftlens``) with one leaf's definition replaced.

    Args:
        session: The workspace's session (not committed here).
        definition: The leaf's new definition; its triggers and exclusions are kept.
        leaf: The leaf's name; without it, the ``index``-th leaf.
        index: Which leaf, in the version's order, when ``leaf`` is not given.
        base: The version edited (``driftlens@1`` makes a branch when newer ones exist).

    Returns:
        The new version.
    """
    version = get_version(base, session=session)
    doc = document(version)
    found = doc.leaf(leaf if leaf is not None else doc.leaf_names[index])
    return edit_leaf(
        version,
        found.name,
        definition=definition,
        triggers=list(found.triggers),
        exclusions=list(found.exclusions),
        session=session,
    )
