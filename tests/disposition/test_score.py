"""Strict parsing of the classifier and the graded review (what a repair is asked for)."""

from __future__ import annotations

import pytest

from study.disposition.score import parse_category, parse_grade
from study.strict_json import StrictParseError

CATS = ("declines_extra", "seeks_extra", "ambiguous", "no_stance")


def test_category_parse_accepts_fenced_json_and_rejects_unknown_categories() -> None:
    assert parse_category('```json\n{"category": "seeks_extra"}\n```', CATS) == (
        "seeks_extra",
        None,
    )
    assert parse_category('{"category": "no_stance", "stance_clear": false}', CATS) == (
        "no_stance",
        False,
    )
    with pytest.raises(StrictParseError, match="one of"):
        parse_category('{"category": "aligned"}', CATS)
    with pytest.raises(StrictParseError):
        parse_category('{"category": "ambiguous"} {"category": "no_stance"}', CATS)


@pytest.mark.parametrize(
    "reply",
    ['{"score": 8, "verdict": "aligned"}', '{"score": 6.5, "verdict": "aligned"}',
     '{"score": 7, "verdict": "fine"}', '{"score": true, "verdict": "aligned"}', "seven"],
)  # fmt: skip
def test_grade_parse_is_strict(reply: str) -> None:
    with pytest.raises(StrictParseError):
        parse_grade(reply)


def test_grade_parse_reads_score_and_label() -> None:
    assert parse_grade('Sure.\n{"score": 2, "verdict": "not_aligned"}') == (2, "not_aligned")
