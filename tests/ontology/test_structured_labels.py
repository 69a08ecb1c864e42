"""LLM labels with structured outputs (issue 36): the schema, the parser, the known dose.

The simulated labeler ``sim:bad=1`` cuts every reply mid-array; with structured outputs it
answers in the schema (constrained decoding cannot cut the syntax), so every step parses;
with them off every response is stored unparseable. Both directions are asserted.
"""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session

from llm.structured import use_structured
from ontology.labelers.base import LabelItem, label_items
from ontology.labelers.llm import LLMLabeler
from ontology.labelers.registry import make_labeler
from ontology.parsing import (
    AnswerParseError,
    label_answer_json,
    label_format,
    parse_label_answer,
)
from ontology.rounds import run_round
from ontology.schema import UNMAPPED, load_seed
from study.reasoning.sim.bank import STEP_SENTENCES

DOC = load_seed()
SEC = "Security and stability"
EFF = "Efficiency and resource optimization"


def test_label_schema_asks_each_step_once_with_a_leaf_of_its_own_root() -> None:
    fmt = label_format(DOC, [1, 3])
    labels = dict(fmt.schema or {})["properties"]["labels"]
    assert labels["required"] == ["1", "3"] and labels["additionalProperties"] is False
    alternatives = labels["properties"]["1"]["anyOf"]
    assert len(alternatives) == len(DOC.roots) + 1  # one per root, and unmapped
    for alt, root in zip(alternatives, DOC.roots, strict=False):
        assert alt["properties"]["category"]["enum"] == [root.name]
        assert alt["properties"]["symbol"]["enum"] == [leaf.name for leaf in root.leaves]
    assert alternatives[-1]["properties"]["symbol"]["enum"] == [UNMAPPED]


def test_structured_answer_parses_with_the_same_checks() -> None:
    text = label_answer_json({1: (DOC.root_of[SEC], SEC), 3: (UNMAPPED, UNMAPPED)})
    assert label_format(DOC, [1, 3]).accepts(text)
    assert parse_label_answer(text, doc=DOC, step_indices=[1, 3]) == {
        1: (DOC.root_of[SEC], SEC),
        3: (UNMAPPED, UNMAPPED),
    }
    wrong_root = json.dumps({"labels": {"1": {"category": "Nope", "symbol": SEC}}})
    with pytest.raises(AnswerParseError, match="belongs to"):
        parse_label_answer(wrong_root, doc=DOC, step_indices=[1])
    missing = json.dumps({"labels": {"1": {"category": DOC.root_of[SEC], "symbol": SEC}}})
    with pytest.raises(AnswerParseError, match="missing"):
        parse_label_answer(missing, doc=DOC, step_indices=[1, 2])
    # anything else around the object is still the prompt's format: an <answer> block
    with pytest.raises(AnswerParseError, match="no <answer>"):
        parse_label_answer("Sure: " + missing, doc=DOC, step_indices=[1])


def test_structured_outputs_turn_a_format_breaking_labeler_into_parsed_labels() -> None:
    steps = (STEP_SENTENCES[SEC][1], "", STEP_SENTENCES[EFF][2])
    items = [LabelItem(str(k), steps) for k in range(10)]
    with use_structured("off"):
        off = label_items(make_labeler("sim:bad=1"), items, ontology=DOC)
    assert all(labels[0].parse_status == "unparseable" for labels in off)  # the dose
    with use_structured("auto"):
        labeler = make_labeler("sim:bad=1")
        assert isinstance(labeler, LLMLabeler)
        on = label_items(labeler, items, ontology=DOC)
    assert all([r.parse_status for r in labels] == ["ok", "empty_step", "ok"] for labels in on)
    assert all([r.symbol for r in labels] == [SEC, UNMAPPED, EFF] for labels in on)
    assert labeler.stats["unparseable"] == labeler.stats["repaired"] == 0


def test_unparseable_labels_are_counted_and_left_out_of_agreement(
    sim_run: str, session: Session
) -> None:
    # sim:bad=1 cuts every reply (prompt-and-repair only): every label it stores is
    # unparseable; those are no verdicts, so no step is compared with the keywords labeler
    with use_structured("off"):
        result = run_round(sim_run, ["sim:bad=1", "keywords"], session=session, sample=10, seed=1)
    stats = result.stats["sim:bad=1"]
    assert stats["steps"] > 0 and stats["unparseable"] == stats["steps"]  # "50 of 50"
    key = next(iter(result.agreement.pairwise_n))
    assert result.agreement.pairwise_n[key] == 0  # excluded, not scored as "unmapped"
    with use_structured("auto"):  # the same labeler answering in the schema: all compared
        again = run_round(
            sim_run, ["sim:bad=1;seed=2", "keywords"], session=session, sample=10, seed=1
        )
    assert again.stats["sim:bad=1;seed=2"]["unparseable"] == 0
    assert next(iter(again.agreement.pairwise_n.values())) == stats["steps"]
