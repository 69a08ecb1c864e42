"""The sources simulator tells items apart by what a model sees, not by question text."""

from __future__ import annotations

import pytest

from llm.types import ChatMessage
from storage.errors import InputError
from study.catalog.assertions import question_block
from study.sources.items import MCQItem, parse_items
from study.sources.sim.wiring import probe_parser


def test_items_repeating_a_question_text_are_told_apart_by_their_options() -> None:
    items = [
        MCQItem(id=f"i{k}", question="Which of these is true?", choices=c, answer=a)
        for k, (c, a) in enumerate(
            [(("red", "blue"), "A"), (("cats", "dogs", "fish"), "C"), (("up", "down"), "B")]
        )
    ]
    parse = probe_parser(items)
    for it in items:
        user = question_block(it.question, it.choices)
        probe = parse([ChatMessage(role="user", content=user)])
        assert probe is not None
        assert (probe.key, probe.gold, probe.n_choices) == (
            it.id, it.answer_index, len(it.choices)
        )  # fmt: skip


def test_an_item_repeating_question_and_options_is_refused_at_import() -> None:
    line = '{{"id": "{}", "question": "Which?", "choices": ["x", "y"], "answer": "{}"}}'
    text = "\n".join([line.format("a", "A"), line.format("b", "B")]) + "\n"
    with pytest.raises(InputError, match="line 2: item 'b' repeats the question and options"):
        parse_items(text, source="items.jsonl")


def test_probe_export_writes_logprob_objects_in_one_key_order() -> None:
    """A record read back from PostgreSQL's JSONB (keys shortest first) exports as SQLite's."""
    import json

    from study.sources.plan import canonical_logprobs

    written = [{"token": "A", "logprob": -0.1, "top": [["A", -0.1], ["B", -2.3]]}]
    from_jsonb = [{"top": [["A", -0.1], ["B", -2.3]], "token": "A", "logprob": -0.1}]
    assert json.dumps(canonical_logprobs(from_jsonb)) == json.dumps(written)
    assert canonical_logprobs(None) is None
