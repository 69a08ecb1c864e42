"""Logprob helpers: choice distributions, the answer position, parsers and the JSON form."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm.logprobs import (
    answer_position,
    choice_distribution,
    logprobs_from_json,
    logprobs_to_json,
    parse_openai_logprobs,
    parse_vllm_logprobs,
)
from llm.sim.extras import sim_logprobs, tokenize
from llm.types import TokenLogprob


def test_choice_distribution_counts_only_exact_stripped_matches() -> None:
    top = [(" B", math.log(0.5)), ("A", math.log(0.2)), ("b", math.log(0.1)), ("B)", -1.0)]
    dist = choice_distribution(top, ["A", "B", "C"])
    assert dist.found
    assert dist.probs["B"] == pytest.approx(0.5 / 0.7)
    assert dist.probs["A"] == pytest.approx(0.2 / 0.7)
    assert dist.probs["C"] == 0.0
    assert dist.missing == ("C",)
    assert dist.captured_mass == pytest.approx(0.7)
    assert sum(dist.probs.values()) == pytest.approx(1.0, abs=1e-12)


def test_choice_distribution_adds_variants_of_one_choice_and_ignores_repeats() -> None:
    top = [("B", math.log(0.3)), (" B", math.log(0.2)), ("B", math.log(0.3)), ("C", -2.0)]
    dist = choice_distribution(top, ["B", "C", "B"])
    assert list(dist.probs) == ["B", "C"]
    assert dist.captured_mass == pytest.approx(0.5 + math.exp(-2.0))


def test_choice_distribution_without_any_choice_is_not_found() -> None:
    dist = choice_distribution([("The", -0.1), (" answer", -3.0)], ["A", "B"])
    assert not dist.found
    assert dist.probs == {"A": 0.0, "B": 0.0}
    assert dist.missing == ("A", "B") and dist.captured_mass == 0.0


@given(
    st.lists(
        st.tuples(st.sampled_from(["A", " B", "C ", "D", "x", " y"]), st.floats(-20.0, 0.0)),
        min_size=1,
        max_size=8,
    )
)
def test_choice_distribution_sums_to_one_whenever_found(top: list[tuple[str, float]]) -> None:
    dist = choice_distribution(top, ["A", "B", "C", "D"])
    if dist.found:
        assert abs(sum(dist.probs.values()) - 1.0) < 1e-9
        assert dist.captured_mass > 0.0
    else:
        assert set(dist.missing) == {"A", "B", "C", "D"}


def _lp(*tokens: str) -> tuple[TokenLogprob, ...]:
    return tuple(TokenLogprob(t, -0.1, ((t, -0.1),)) for t in tokens)


def test_answer_position_after_a_prefix_and_among_choices() -> None:
    toks = _lp("I", " think", ".", " Answer", ":", " (", "B", ")")
    assert answer_position(toks, after="Answer:") == toks[5]  # first non-blank token
    assert answer_position(toks, after="Answer:", choices="ABCD") == toks[6]
    assert answer_position(toks, choices=["B"], max_skip=10) == toks[6]
    assert answer_position(toks, choices=["B"]) is None  # too far from the start
    assert answer_position(toks, after="Final answer:") is None
    assert answer_position(toks, after="Answer:", choices=["B"], max_skip=0) is None
    assert answer_position(None) is None
    assert answer_position(_lp(" ", "C"), choices="ABC") is not None  # blank tokens skipped


def test_parse_openai_logprobs_from_wire_json() -> None:
    wire = {
        "content": [
            {
                "token": " B",
                "logprob": -0.2,
                "bytes": [32, 66],
                "top_logprobs": [
                    {"token": " A", "logprob": -2.5},
                    {"token": " B", "logprob": -0.2},
                    {"token": " C", "logprob": None},
                ],
            }
        ]
    }
    (tok,) = parse_openai_logprobs(wire) or ()
    assert tok.token == " B" and tok.logprob == -0.2
    assert tok.top[:2] == ((" B", -0.2), (" A", -2.5))  # best first
    assert tok.top[2] == (" C", float("-inf"))
    assert parse_openai_logprobs(None) is None
    assert parse_openai_logprobs({"content": None}) is None


@dataclass
class _VLLMLogprob:  # the shape of vllm.sequence.Logprob (plain data, no engine involved)
    logprob: float
    rank: int
    decoded_token: str


def test_parse_vllm_logprobs_keeps_k_alternatives_and_the_sampled_token() -> None:
    positions = [
        {
            7: _VLLMLogprob(-0.1, 1, " B"),
            3: _VLLMLogprob(-2.0, 2, " A"),
            9: _VLLMLogprob(-4.0, 3, " C"),
        },
        {5: _VLLMLogprob(-3.0, 4, "."), 1: _VLLMLogprob(-0.5, 1, "!")},
    ]
    out = parse_vllm_logprobs([7, 5], positions, top_k=2)
    assert out is not None and len(out) == 2
    assert out[0] == TokenLogprob(" B", -0.1, ((" B", -0.1), (" A", -2.0)))
    # The sampled token ranked 4th: still the token of its position, not in the top-2.
    assert out[1].token == "." and out[1].logprob == -3.0
    assert out[1].top == (("!", -0.5), (".", -3.0))
    assert parse_vllm_logprobs([1], None) is None


def test_json_form_round_trips_and_stores_impossible_tokens_as_null() -> None:
    toks = (TokenLogprob(" B", -0.25, ((" B", -0.25), (" Z", float("-inf")))),)
    data = logprobs_to_json(toks)
    text = json.dumps(data, allow_nan=False)  # PostgreSQL's json type refuses -Infinity
    assert logprobs_from_json(json.loads(text)) == toks
    assert logprobs_to_json(None) is None
    assert logprobs_from_json(None) is None and logprobs_from_json("junk") is None


def test_sim_logprobs_are_consistent_with_the_text_and_seeded() -> None:
    text = "<think><step_1>Weigh it.</step_1></think><answer>B</answer>\n"
    a = sim_logprobs(text, seed=3, top_k=5)
    assert "".join(t.token for t in a) == text == "".join(tokenize(text))
    assert a == sim_logprobs(text, seed=3, top_k=5)
    assert a != sim_logprobs(text, seed=4, top_k=5)
    for tok in a:
        assert tok.top[0] == (tok.token, tok.logprob)  # the chosen token is the best
        assert len(tok.top) == 5 and len({t for t, _ in tok.top}) == 5
        assert [lp for _, lp in tok.top] == sorted((lp for _, lp in tok.top), reverse=True)
        assert sum(math.exp(lp) for _, lp in tok.top) < 1.0
    letter = answer_position(a, after="<answer>", choices="ABCD")
    assert letter is not None and letter.token == "B"
    dist = choice_distribution(letter.top, "ABCD")
    assert max(dist.probs, key=dist.probs.__getitem__) == "B"
    assert len(dist.missing) == 0 and abs(sum(dist.probs.values()) - 1) < 1e-9
    assert all(not t.top for t in sim_logprobs(text, seed=3, top_k=0))
