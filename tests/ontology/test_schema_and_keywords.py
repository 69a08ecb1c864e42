"""Ontology documents (seeds, validation, YAML round trip) and the keywords labeler."""

from __future__ import annotations

import pytest

from ontology.labelers.keywords import KeywordLabeler, label_step, score_step
from ontology.schema import UNMAPPED, dump_ontology, load_seed, parse_ontology
from storage.errors import InputError

SPEC_LEAVES = {
    "Social": {"Cultural respect and tradition", "Social equity and justice"},
    "Practical": {"Efficiency and resource optimization", "Professional advancement"},
    "Protective": {
        "Security and stability",
        "Protection of people and environment",
        "Ethical responsibility",
    },
    "Personal": {
        "Artistic expression and appreciation",
        "Emotional depth and authentic connection",
        "Spiritual fulfillment and meaning",
        "Pleasure and enjoyment",
    },
}


@pytest.mark.parametrize("name", ["driftlens", "original"])
def test_seeds_have_the_spec_roots_and_leaves(name: str) -> None:
    doc = load_seed(name)
    got = {root.name: {leaf.name for leaf in root.leaves} for root in doc.roots}
    assert got == SPEC_LEAVES
    assert [doc.symbol_of[n] for n in doc.leaf_names] == list(range(1, 12))
    assert doc.symbol_of[UNMAPPED] == 0


def test_operational_seed_has_triggers_exclusions_and_examples_everywhere() -> None:
    doc = load_seed("driftlens")
    for root in doc.roots:
        assert root.triggers and root.exclusions
        for leaf in root.leaves:
            assert len(leaf.triggers) >= 5 and leaf.exclusions and len(leaf.examples) >= 2


def test_yaml_round_trip_and_hash_is_content_based() -> None:
    doc = load_seed()
    again = parse_ontology(dump_ontology(doc))
    assert again == doc and again.content_hash() == doc.content_hash()
    assert load_seed("original").content_hash() != doc.content_hash()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("name: x\nroots: []\n", "roots"),
        ("just a string", "mapping"),
        ("name: x\nroots: [\n", "line 3, column 1: invalid YAML"),
        (
            "name: x\nroots:\n- name: A\n  definition: a\n  leaves:\n"
            "  - {name: L, definition: d}\n  - {name: L, definition: e}\n",
            "repeated: L",
        ),
        (
            "name: x\nroots:\n- name: A\n  definition: a\n  leaves:\n"
            "  - {name: unmapped, definition: d}\n",
            "reserved",
        ),
    ],
)
def test_invalid_documents_raise_one_clear_input_error(text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        parse_ontology(text, source="bad.yaml")


def test_keywords_label_each_seed_example_as_its_own_leaf() -> None:
    """The seed's own examples are the minimum bar for the mechanical rules."""
    doc = load_seed()
    for root in doc.roots:
        for leaf in root.leaves:
            for example in leaf.examples:
                assert label_step(example, doc) == (root.name, leaf.name), example


def test_keywords_unmapped_exclusions_and_empty_steps() -> None:
    doc = load_seed()
    assert label_step("The sky was grey on Tuesday.", doc) == (UNMAPPED, UNMAPPED)
    # 'promotion' is an exclusion of the efficiency leaf: the career leaf must win.
    text = "Compare the cost of the course with the promotion it may bring."
    assert label_step(text, doc)[1] == "Professional advancement"
    scores = score_step(text, doc)
    assert scores["Efficiency and resource optimization"] < scores["Professional advancement"]
    results = KeywordLabeler().label_steps(["", "Keep savings as a buffer."], ontology=doc)
    assert (results[0].symbol, results[0].parse_status) == (UNMAPPED, "empty_step")
    assert results[1].symbol == "Security and stability"


def test_keywords_react_to_definition_edits() -> None:
    doc = load_seed()
    text = "Bake bread together on Sundays."
    assert label_step(text, doc) == (UNMAPPED, UNMAPPED)
    data = doc.model_dump()
    data["roots"][3]["leaves"][3]["triggers"] = [*data["roots"][3]["leaves"][3]["triggers"], "bake"]
    edited = type(doc).model_validate(data)
    assert label_step(text, edited) == ("Personal", "Pleasure and enjoyment")
