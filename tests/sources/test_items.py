"""Item import (ours, CommonsenseQA, GSM8K-MC) with line-numbered errors, and shipped items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage.errors import InputError
from study.sources.items import (
    answer_balance,
    items_to_jsonl,
    parse_items,
    read_items,
    shipped_items,
)


def test_shipped_items_are_balanced_and_round_trip() -> None:
    items = shipped_items()
    assert len(items) == 100
    bal = answer_balance(items)
    assert set(bal) == {"commonsense", "arithmetic"}
    assert all(v == pytest.approx(0.2) for v in bal["commonsense"].values())
    assert all(v == pytest.approx(0.25) for v in bal["arithmetic"].values())
    again = parse_items(items_to_jsonl(items), source="x.jsonl")
    assert again == items


def test_commonsenseqa_both_shapes() -> None:
    original = {
        "id": "q1",
        "answerKey": "B",
        "question": {
            "stem": "Where?",
            "choices": [
                {"label": "A", "text": "here"},
                {"label": "B", "text": "there"},
                {"label": "C", "text": "nowhere"},
            ],
        },
    }
    hf = {
        "id": "q2",
        "question": "Why?",
        "answerKey": "A",
        "choices": {"label": ["A", "B"], "text": ["because", "why not"]},
    }
    text = json.dumps(original) + "\n" + json.dumps(hf) + "\n"
    items = parse_items(text, source="csqa.jsonl")
    assert [(i.id, i.question, i.answer, i.dataset) for i in items] == [
        ("q1", "Where?", "B", "csqa"),
        ("q2", "Why?", "A", "csqa"),
    ]
    assert items[0].choices == ("here", "there", "nowhere")


def test_gsm8k_mc_shape() -> None:
    row = {"Question": "2+2?", "A": "3", "B": "4", "C": "5", "D": "22", "Answer": "B"}
    (item,) = parse_items(json.dumps(row), source="g.jsonl")
    assert (item.dataset, item.answer, item.choices[1]) == ("gsm8k", "B", "4")


def test_csv_with_letter_columns(tmp_path: Path) -> None:
    p = tmp_path / "items.csv"
    p.write_text("id,question,A,B,C,answer\nx1,Pick one,red,green,blue,c\n")
    (item,) = read_items(p)
    assert item.answer == "C" and item.choice_text("C") == "blue"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            ['{"id": "a", "question": "q", "choices": ["x", "y"], "answer": "C"}'],
            "line 1: answer 'C' is not one of the letters A, B",
        ),
        (
            ['{"id": "a", "question": "q", "choices": ["x", "y"], "answer": "A"}', "{oops"],
            "line 2: not valid JSON",
        ),
        (
            ['{"id": "a", "question": "q", "choices": ["x", "x"], "answer": "A"}'],
            "line 1: choices: two choices have the same text",
        ),
        (
            [
                '{"id": "a", "question": "q", "choices": ["x", "y"], "answer": "A"}',
                "",
                '{"id": "a", "question": "r", "choices": ["x", "y"], "answer": "B"}',
            ],
            "line 3: id 'a' already used on line 1",
        ),
        (
            ['{"id": "a", "question": "  ", "choices": ["x", "y"], "answer": "A"}'],
            "line 1: question",
        ),
        (["[1, 2]"], "line 1: expected one JSON object per line"),
    ],
)
def test_bad_items_name_the_line(lines: list[str], expected: str) -> None:
    with pytest.raises(InputError, match=None) as exc:
        parse_items("\n".join(lines), source="items.jsonl")
    assert str(exc.value).startswith("items.jsonl, line")
    assert expected in str(exc.value)


def test_missing_and_empty(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="File not found"):
        read_items(tmp_path / "none.jsonl")
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="holds no items"):
        read_items(empty)
