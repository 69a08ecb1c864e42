"""The ``sim:definitions`` labeler and the simulated rewriters: known doses both ways.

The labeler's confusion must follow the definitions it is sent (fall with separating
triggers that occur in the steps, rise with shared terms), start below 40 % on the abstract
ontology and near 83 % on the operational one; the fixed-rate labeler cannot show any of
that (the contrast); the rewriters must help (operational), hurt (blur) and help then hurt
(append).
"""

from __future__ import annotations

import re

from llm.sim.registry import step_bank
from ontology.labelers.registry import make_labeler, parse_labeler_spec
from ontology.labelers.sim import SimStudioBackend
from ontology.labelers.sim_definitions import (
    confusion_weight,
    expected_agreement,
    leaves_of_request,
    words,
)
from ontology.prompts import definition_block, render_ontology, rewrite_messages
from ontology.schema import OntologyDoc, load_seed
from ontology.versions import replace_definitions

CULT, EQUITY = "Cultural respect and tradition", "Social equity and justice"


def _agreement(doc: OntologyDoc) -> float:
    return expected_agreement(leaves_of_request(render_ontology(doc)), step_bank()[1])


def _leaf(doc: OntologyDoc, name: str):
    return next(v for v in leaves_of_request(render_ontology(doc)) if v.name == name)


def _rewrite(doc: OntologyDoc, style: str, a: str = CULT, b: str = EQUITY) -> OntologyDoc:
    bank = step_bank()[1]
    evidence = [*bank[a][:4], *bank[b][:4]]
    messages = rewrite_messages(
        a, definition_block(doc.leaf(a)), b, definition_block(doc.leaf(b)), evidence
    )
    from llm.types import ChatMessage, ChatRequest

    request = ChatRequest(messages=tuple(ChatMessage(role=r, content=c) for r, c in messages))
    text = SimStudioBackend(rewriter=style).answer(request).text or ""
    one = re.search(r"<def1>(.*)</def1>", text, re.S)
    two = re.search(r"<def2>(.*)</def2>", text, re.S)
    assert one and two, text
    return replace_definitions(doc, {a: one.group(1), b: two.group(1)})


def test_calibration_original_below_40_driftlens_near_83() -> None:
    assert _agreement(load_seed("original")) < 0.40
    assert 0.80 <= _agreement(load_seed("driftlens")) <= 0.86


def test_spec_parses_and_is_part_of_the_cache_scope() -> None:
    config = parse_labeler_spec("sim:definitions;seed=2")
    assert config.seed == 2 and config.params["sim"].startswith("definitions;")
    # the fixed-rate labeler with the same seed is another labeler (another cache scope)
    assert parse_labeler_spec("sim:seed=2").params["sim"] != config.params["sim"]


def test_separating_triggers_in_the_step_lower_confusion_shared_terms_raise_it() -> None:
    doc = load_seed("original")
    step = words(step_bank()[1][CULT][0])  # "Family customs and community traditions …"
    before = confusion_weight(_leaf(doc, CULT), _leaf(doc, EQUITY), step, seed=1)
    separated = doc.model_copy(deep=True)
    separated = replace_definitions(
        separated, {CULT: "Respect for culture and tradition.\nTriggers: customs, community"}
    )
    after = confusion_weight(_leaf(separated, CULT), _leaf(separated, EQUITY), step, seed=1)
    assert after < before / 5
    # a trigger that never occurs in the step changes nothing
    idle = replace_definitions(doc, {CULT: "Respect for culture and tradition.\nTriggers: opera"})
    same = confusion_weight(_leaf(idle, CULT), _leaf(idle, EQUITY), step, seed=1)
    assert abs(same - before) < 1e-12
    shared = replace_definitions(
        doc,
        {
            CULT: "Respect for culture, tradition, equity and justice in society.",
            EQUITY: "Concern for equity, justice, culture and tradition in society.",
        },
    )
    assert confusion_weight(_leaf(shared, CULT), _leaf(shared, EQUITY), step, seed=1) > before


def test_labels_follow_the_definitions_the_fixed_rate_labeler_does_not() -> None:
    """The contrast: the old labeler gives the same labels whatever the definitions say."""
    doc = load_seed("original")
    better = _rewrite(doc, "operational")
    steps = [s for leaf in (CULT, EQUITY) for s in step_bank()[1][leaf]]
    truth = [CULT] * 6 + [EQUITY] * 6
    fixed = make_labeler(f"sim:confuse={CULT}~{EQUITY}@0.4;seed=1")
    assert [r.symbol for r in fixed.label_steps(steps, ontology=doc)] == [
        r.symbol for r in fixed.label_steps(steps, ontology=better)
    ]
    wrong = {}
    for name, d in (("before", doc), ("after", better)):
        got = [
            r.symbol
            for seed in (1, 2, 3)
            for r in make_labeler(f"sim:definitions;seed={seed}").label_steps(steps, ontology=d)
        ]
        wrong[name] = sum(g != t for g, t in zip(got, truth * 3, strict=True))
    assert wrong["after"] < wrong["before"]


def test_operational_rewrite_helps_blur_hurts() -> None:
    doc = load_seed("original")
    start = _agreement(doc)
    assert _agreement(_rewrite(doc, "operational")) > start + 0.02
    assert _agreement(_rewrite(doc, "blur")) < start


def test_append_helps_at_first_then_hurts() -> None:
    doc = load_seed("original")
    curve = [_agreement(doc)]
    for _ in range(5):
        doc = _rewrite(doc, "append")
        curve.append(_agreement(doc))
    assert curve[1] > curve[0]  # the first append adds separating triggers
    assert curve[-1] < max(curve)  # later appends only add length: agreement falls
