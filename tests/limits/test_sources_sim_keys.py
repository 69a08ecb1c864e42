"""The sources simulator tells items apart by what a model sees, not by question text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from llm.specs import ModelSpec
from llm.types import ChatMessage
from storage.errors import InputError
from study.catalog.assertions import question_block
from study.sources.items import MCQItem, parse_items
from study.sources.sim.wiring import probe_parser
from tests.limits.conftest import Outcome


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


def _repeated_items(n: int, repeats: int) -> list[MCQItem]:
    """``n`` items; the last ``repeats`` reuse an earlier item's question with new options
    (the shape of bench/sources_repeated_texts.py's 500 items)."""
    distinct = n - repeats
    return [
        MCQItem(
            id=f"q{i:04d}",
            question=f"Synthetic question {i % distinct}?",
            choices=tuple(f"option {i}-{k}" for k in range(4)),
            answer="ABCD"[(i * 7) % 4],
        )
        for i in range(n)
    ]


def test_a_run_through_rendered_probes_recovers_sdr_plus_when_texts_repeat() -> None:
    """The audit's case at a small size: 120 items, 40 repeating an earlier text.

    Keyed by the text, each repeat was answered as the last item sharing it (gold, bare
    answer and wrong option of another item), and SDR+ read 0.55-0.61 for 0.87-0.90 at
    170 of 500 repeats. Through the rendered probes, read back by the simulator's parser:
    every probe read, the truth inside both SDR+ intervals.
    """
    from study.sources.analysis import analyze_sources_table
    from study.sources.plan import SourcesConfig, run_sources
    from study.sources.sim.probe import SOURCE_PRESETS
    from study.sources.sim.wiring import backend_for

    items = _repeated_items(120, 40)
    assert len({it.question for it in items}) == 80
    run = run_sources(
        items, backend_for(ModelSpec.parse("sim/src-impressionable"), items), config=SourcesConfig()
    )
    assert run.n_unknown == 0 and run.n_errors == 0
    table = run.table()
    cell = analyze_sources_table(table, bootstrap=300, seed=5).to_dict()["models"]
    c = next(iter(next(iter(cell.values())).values()))
    truth = SOURCE_PRESETS["src-impressionable"].sdr_plus
    for source in ("user", "doc"):
        lo, hi = c["rate_ci"][source]["sdr_plus"]
        assert lo <= truth.of(source) <= hi, (source, lo, hi)


def test_an_item_repeating_only_the_question_text_is_kept_and_flagged(
    tmp_path: Path, run_main: Callable[..., Outcome]
) -> None:
    line = '{{"id": "{}", "question": "Which?", "choices": {}, "answer": "A"}}'
    text = "\n".join([line.format("a", '["x", "y"]'), line.format("b", '["u", "v"]')]) + "\n"
    notes: list[str] = []
    items = parse_items(text, source="items.jsonl", notes=notes)
    assert [it.id for it in items] == ["a", "b"]
    assert notes == [
        "items.jsonl, line 2: item 'b' repeats the question text of line 1 with other "
        "options (kept: told apart by its options)"
    ]
    path = tmp_path / "items.jsonl"
    path.write_text(text, encoding="utf-8")
    res = run_main("sources", "items", str(path))
    assert res.code == 0, res
    assert "2 items read" in res.out and "line 2: item 'b' repeats the question text" in res.out
