"""The main line of an ontology's versions: a branch is never a silent default, and an edit
of an old version can be moved onto the newest one without reverting it (issue #20 B)."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from ontology.lineage import branch_of, main_line, rebase_edit
from ontology.schema import dump_ontology
from ontology.versions import (
    document,
    get_version,
    import_version,
    list_versions,
    new_version,
    seed_ontologies,
    version_label,
)
from storage.errors import InputError
from tests.ontology.leaf_edits import reword_leaf


def _edit(session: Session, base_ref: str, leaf_index: int, text: str) -> str:
    return version_label(reword_leaf(session, text, index=leaf_index, base=base_ref))


def test_an_edit_of_an_old_version_is_a_branch_and_not_the_default(session: Session) -> None:
    seed_ontologies(session=session)
    assert _edit(session, "driftlens@1", 0, "Second wording.") == "driftlens@2"
    assert _edit(session, "driftlens@2", 1, "Third wording.") == "driftlens@3"
    assert _edit(session, "driftlens@1", 2, "A branch.") == "driftlens@4"
    versions = list_versions("driftlens", session=session)
    assert [v.version for v in main_line(versions)] == [1, 2, 3]
    four = get_version("driftlens@4", session=session)
    assert branch_of(four, versions) == "branch of @1"
    assert branch_of(get_version("driftlens@3", session=session), versions) is None
    # A bare name (the default of rounds, labels and analyses) is the main line's head.
    assert version_label(get_version("driftlens", session=session)) == "driftlens@3"
    assert version_label(get_version(None, session=session)) == "driftlens@3"
    # An edit of the branch stays on the branch; an edit of the head continues the line.
    assert _edit(session, "driftlens@4", 3, "Branch again.") == "driftlens@5"
    assert branch_of(get_version("driftlens@5", session=session), list_versions(session=session))
    assert _edit(session, "driftlens", 4, "Main again.") == "driftlens@6"
    assert version_label(get_version("driftlens", session=session)) == "driftlens@6"
    # An import without a parent continues the main line, not the newest branch.
    edited = document(get_version("driftlens@5", session=session)).model_copy(
        update={"description": "imported"}
    )
    imported = import_version(dump_ontology(edited), session=session)
    assert imported.parent_id == get_version("driftlens@6", session=session).id


def test_rebase_keeps_the_newest_versions_changes_and_applies_the_edit(session: Session) -> None:
    seed_ontologies(session=session)
    _edit(session, "driftlens@1", 0, "Accepted rewrite.")  # @2: what @1 lacks
    one, two = (
        get_version("driftlens@1", session=session),
        get_version("driftlens", session=session),
    )
    base = document(one)
    edited_leaf = base.leaf(base.leaf_names[5])
    from ontology.versions import with_leaf_fields

    edited = with_leaf_fields(
        base,
        edited_leaf.name,
        definition="My edit.",
        triggers=list(edited_leaf.triggers),
        exclusions=["nothing"],
    )
    merged = rebase_edit(base, edited, document(two))
    assert merged.leaf(base.leaf_names[0]).definition == "Accepted rewrite."  # kept
    assert merged.leaf(base.leaf_names[5]).definition == "My edit."
    assert merged.leaf(base.leaf_names[5]).exclusions == ("nothing",)
    stored = new_version(two, merged, session=session)
    assert (stored.version, stored.parent_id) == (3, two.id)


def test_rebase_refuses_a_leaf_the_newest_version_changed_too() -> None:
    from ontology.schema import load_seed
    from ontology.versions import with_leaf_fields

    base = load_seed("driftlens")
    leaf = base.leaf(base.leaf_names[0])
    fields = {"triggers": list(leaf.triggers), "exclusions": list(leaf.exclusions)}
    head = with_leaf_fields(base, leaf.name, definition="Their rewrite.", **fields)
    mine = with_leaf_fields(base, leaf.name, definition="My rewrite.", **fields)
    with pytest.raises(InputError, match=f"also changed leaf '{leaf.name}'"):
        rebase_edit(base, mine, head)
    same = with_leaf_fields(base, leaf.name, definition="Their rewrite.", **fields)
    assert rebase_edit(base, same, head) == head  # the same change twice is no conflict
