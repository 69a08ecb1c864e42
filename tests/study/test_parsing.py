"""Parser: a corpus of nasty real-world outputs and a render/parse round trip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from study.reasoning.parsing import STATUS_VALUES, ParsedResponse, parse_response, render_response

CORPUS_FILE = Path(__file__).parent / "parser_corpus" / "corpus.yaml"
CORPUS: list[dict[str, Any]] = yaml.safe_load(CORPUS_FILE.read_text(encoding="utf-8"))


def test_corpus_is_large_and_covers_every_status() -> None:
    assert len(CORPUS) >= 50
    assert len({case["id"] for case in CORPUS}) == len(CORPUS)
    seen = {case["status"] for case in CORPUS}
    assert seen == set(STATUS_VALUES)


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_corpus_case(case: dict[str, Any]) -> None:
    parsed = parse_response(case["text"])
    assert list(parsed.steps) == case["steps"]
    assert parsed.answer == case["answer"]
    assert parsed.parse_status == case["status"]
    for note in case.get("notes_include", []):
        assert note in parsed.notes
    # The status is always listed among the notes unless the response is clean.
    if parsed.parse_status != "ok":
        assert parsed.parse_status in parsed.notes
    assert all(step.strip() == step and step for step in parsed.steps)


def test_usable_means_steps_and_answer() -> None:
    assert parse_response("<think><step_1>a</step_1></think><answer>b</answer>").usable
    assert not parse_response("<answer>b</answer>").usable
    assert not ParsedResponse((), None, "empty").usable


# Free text that cannot itself form tags, fences or entities: the round trip is then exact.
_fragment = (
    st.text(
        alphabet=st.characters(blacklist_characters="<>&`", blacklist_categories=["Cs"]),
        min_size=1,
        max_size=60,
    )
    .map(str.strip)
    .filter(bool)
)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(_fragment, min_size=1, max_size=12), answer=_fragment)
def test_render_then_parse_is_identity(steps: list[str], answer: str) -> None:
    parsed = parse_response(render_response(steps, answer))
    assert parsed.steps == tuple(steps)
    assert parsed.answer == answer
    assert parsed.parse_status == "ok"
    assert parsed.notes == ()


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.none(), st.text(max_size=300)))
def test_never_raises_and_status_is_known(text: str | None) -> None:
    parsed = parse_response(text)
    assert parsed.parse_status in STATUS_VALUES
    assert all(step for step in parsed.steps)


_tagged_noise = st.lists(
    st.sampled_from(
        [
            "<think>",
            "</think>",
            "<step_1>",
            "</step_1>",
            "<step_2>",
            "<answer>",
            "</answer>",
            "<STEP3>",
            "```",
            "\n\n",
            "1. ",
            "Step 2:",
            "Answer: ",
            "&lt;",
            "word ",
            "  ",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_tagged_noise)
def test_tag_soup_never_raises(text: str) -> None:
    parsed = parse_response(text)
    assert parsed.parse_status in STATUS_VALUES
    if parsed.parse_status == "ok":
        assert parsed.steps and parsed.answer is not None
