"""Editing one leaf's definition, triggers and exclusions stores a new version."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from ontology.versions import clean_terms, document, edit_leaf, get_version, seed_ontologies
from storage.errors import InputError


def test_terms_are_stripped_deduplicated_without_case_and_empty_ones_dropped() -> None:
    assert clean_terms(["  Mortgage ", "mortgage", "", "rent  due", "Rent due", "loan"]) == (
        "Mortgage",
        "rent due",
        "loan",
    )


def test_a_leaf_edit_is_a_child_version_with_its_author_and_only_that_leaf_changed(
    session: Session,
) -> None:
    seed_ontologies(session=session)
    base = get_version("driftlens", session=session)
    before = document(base)
    leaf = before.leaf_names[2]
    other = before.leaf_names[3]
    stored = edit_leaf(
        base,
        leaf,
        definition="  A sharper definition.  ",
        triggers=[*before.leaf(leaf).triggers, "pilgrimage", " Pilgrimage "],
        exclusions=["tourism"],
        session=session,
        author=" Ada ",
        note="tighter wording",
    )
    assert (stored.version, stored.parent_id) == (base.version + 1, base.id)
    assert (stored.author, stored.note) == ("Ada", "tighter wording")
    after = document(stored)
    assert after.leaf(leaf).definition == "A sharper definition."
    assert after.leaf(leaf).triggers == (*before.leaf(leaf).triggers, "pilgrimage")
    assert after.leaf(leaf).exclusions == ("tourism",)
    assert after.leaf(other) == before.leaf(other)
    assert document(base) == before  # the base version is never edited in place


def test_an_unchanged_leaf_returns_the_same_version(session: Session) -> None:
    seed_ontologies(session=session)
    base = get_version("driftlens", session=session)
    leaf = document(base).leaf(document(base).leaf_names[0])
    same = edit_leaf(
        base,
        leaf.name,
        definition=leaf.definition,
        triggers=leaf.triggers,
        exclusions=leaf.exclusions,
        session=session,
        author="Ada",
    )
    assert same.id == base.id


def test_an_empty_definition_or_unknown_leaf_is_one_clear_error(session: Session) -> None:
    seed_ontologies(session=session)
    base = get_version("driftlens", session=session)
    name = document(base).leaf_names[0]
    with pytest.raises(InputError, match=f"the definition of '{name}' is empty"):
        edit_leaf(base, name, definition="  ", triggers=[], exclusions=[], session=session)
    with pytest.raises(InputError, match="no leaf named 'Nope'"):
        edit_leaf(base, "Nope", definition="x", triggers=[], exclusions=[], session=session)
