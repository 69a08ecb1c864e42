"""Letter extraction (text and logprobs), the two-phase plan and the simulated run."""

from __future__ import annotations

import json
import math

import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from llm.types import TokenLogprob
from study.sources.items import shipped_items
from study.sources.plan import SourcesConfig, fixed_wrong_letter, run_sources
from study.sources.score import UNKNOWN, letter_from_text, read_letter
from study.sources.sim.backend import SourceSimBackend
from study.sources.sim.wiring import backend_for, probe_parser

LETTERS = ("A", "B", "C", "D")


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B", "B"),
        (" B", "B"),
        ("B.", "B"),
        ("(C)", "C"),
        ("**D**", "D"),
        ("Answer: A", "A"),
        ("The answer is C.", "C"),
        ("answer", None),
        ("E", None),
        ("", None),
        ("Blue", None),
    ],
)
def test_letters_from_text(text: str, letter: str | None) -> None:
    assert letter_from_text(text, LETTERS) == letter


def _tok(top: list[tuple[str, float]]) -> tuple[TokenLogprob, ...]:
    return (TokenLogprob(top[0][0], top[0][1], tuple(top)),)


def test_answer_never_counts_as_a() -> None:
    top = [("Answer", -0.1), (" B", -2.0), ("b", -2.5), ("B.", -3.0), (" C", -4.0)]
    r = read_letter("Answer", _tok([(" B", -2.0), *top]), LETTERS)
    assert r.letter == "B" and r.method == "logprobs"
    assert r.probs is not None and r.probs["A"] == 0.0
    assert set(r.missing) == {"A", "D"}
    assert sum(r.probs.values()) == pytest.approx(1.0)
    assert r.captured_mass == pytest.approx(math.exp(-2.0) + math.exp(-4.0))


def test_letters_among_the_alternatives_of_a_non_letter_token() -> None:
    # a base model may continue "Answer:" with " The"; the letters at that position count
    lp = (TokenLogprob(" The", -0.5, ((" The", -0.5), (" B", -1.5), (" A", -2.5))),)
    r = read_letter(" The", lp, LETTERS)
    assert r.letter == "B" and r.method == "logprobs" and r.generated is None
    assert r.probs is not None and r.probs["B"] > r.probs["A"] > 0
    # a blank first token (what Gemma 3 270M often continues "Answer:" with) likewise
    blank = (TokenLogprob("\n", -1.9, (("\n", -1.9), (" A", -2.2), (" D", -2.3))),)
    r = read_letter("\n", blank, LETTERS)
    assert r.letter == "A" and r.method == "logprobs"


def test_argmax_versus_generated() -> None:
    lp = _tok([(" C", -0.2), (" A", -1.9)])
    assert read_letter(" C", lp, LETTERS).letter == "C"
    sampled = (TokenLogprob(" A", -1.9, ((" C", -0.2), (" A", -1.9))),)
    assert read_letter(" A", sampled, LETTERS).letter == "C"
    assert read_letter(" A", sampled, LETTERS, choose="generated").letter == "A"


def test_no_letter_is_unknown_and_uniform() -> None:
    r = read_letter("I am not sure", _tok([("I", -0.1), (" am", -2.0)]), LETTERS)
    assert r.letter == UNKNOWN and r.unknown and r.probs == dict.fromkeys(LETTERS, 0.25)
    text_only = read_letter("B", None, LETTERS)
    assert (text_only.letter, text_only.probs, text_only.method) == ("B", None, "text")


def test_fixed_wrong_comes_from_the_bare_reading() -> None:
    item = shipped_items()[0]  # answer A
    own_wrong = read_letter(" C", _tok([(" C", -0.1), (" A", -2.5)]), item.letters)
    assert fixed_wrong_letter(item, own_wrong) == "C"
    right = read_letter(" A", _tok([(" A", -0.1), (" D", -2.5), (" B", -3.0)]), item.letters)
    assert fixed_wrong_letter(item, right) == "D"


def test_simulated_run_is_two_phase_and_stores_everything() -> None:
    items = shipped_items()[:20]
    backend = backend_for(ModelSpec.parse("sim/src-paper"), items)
    seen: list[str] = []
    run = run_sources(items, backend, config=SourcesConfig(), on_phase=seen.append)
    assert seen == ["bare", "probes"]
    assert len(run.records) == 20 * 13 and run.n_errors == 0 and run.n_unknown == 0
    assert [r.variant for r in run.records[:20]] == ["bare"] * 20
    bare = {r.item_id: r for r in run.records if r.variant == "bare"}
    for r in run.records:
        b = bare[r.item_id]
        assert r.wrong_letter == fixed_wrong_letter(
            items[[i.id for i in items].index(r.item_id)], b.reading
        )
        assert r.reading.probs is not None
        assert sum(r.reading.probs.values()) == pytest.approx(1.0)
        assert r.logprobs and r.logprobs[0]["top"]  # raw logprobs kept
        assert r.messages[-1].role == "assistant" and r.messages[-1].content == "Answer:"
    table = run.table()
    assert len(table) == 260 and set(table["tier"]) == {"", "1"}
    rec = json.loads(run.jsonl().splitlines()[30])
    assert {"choice", "probs", "top", "logprobs", "messages"} <= set(rec)


def test_reasoning_route_and_completion_style_prompt() -> None:
    items = shipped_items()[:3]
    run = run_sources(
        items,
        backend_for(ModelSpec.parse("sim/src-selective"), items),
        config=SourcesConfig(reasoning=True, variants=("bare", "u+")),
    )
    assert all(r.reasoning for r in run.records)
    assert all(r.messages[-1].content.endswith("Answer:") for r in run.records)
    assert all(r.messages[-1].content.startswith(r.reasoning or "!") for r in run.records)
    plain = run_sources(
        items,
        backend_for(ModelSpec.parse("sim/src-selective"), items),
        config=SourcesConfig(prefill=False, variants=("bare", "d-")),
    )
    assert all(r.messages[-1].role == "user" for r in plain.records)
    assert all(r.reading.method == "logprobs" for r in plain.records)


def test_cached_rerun_answers_from_the_cache(session: Session) -> None:
    items = shipped_items()[:5]
    backend = SourceSimBackend("src-paper", parse_probe=probe_parser(items))
    first = run_sources(items, backend, session=session)
    again = run_sources(items, backend, session=session)
    assert again.table().equals(first.table())
    assert [r.logprobs for r in again.records] == [r.logprobs for r in first.records]
    assert not any(r.cached for r in first.records) and all(r.cached for r in again.records)
