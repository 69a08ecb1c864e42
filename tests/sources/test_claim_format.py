"""The claim writer's structured output format (issue 36): one declarative sentence.

Gemma 3 270M, asked for a claim with structured outputs on, copied the question and its
numbered options into the claim (``"Which planet is closest to the sun? (1) Mercury ...
[answer] ..."``), which follows a format that only bounds the length, and which the parser
then refuses for naming an option. The format now rules out what such a copy needs: a
question mark, parentheses, a line break.
"""

from __future__ import annotations

import re

import pytest

from study.sources.tier2 import claim_format


def _pattern() -> str:
    schema = claim_format().schema
    assert schema is not None
    return str(schema["properties"]["claim"]["pattern"])


@pytest.mark.parametrize(
    "claim",
    [
        "The planet closest to the sun is [answer].",
        "[answer] is the closest planet to the sun, at 58 million km.",
        "In 1969, [answer] landed on the moon first.",
    ],
)
def test_a_declarative_claim_follows_the_format(claim: str) -> None:
    assert re.fullmatch(_pattern(), claim)


@pytest.mark.parametrize(
    "claim",
    [
        "Which planet is closest to the sun? (1) Mercury (2) Venus (3) Earth (4[answer] (5) Mars",
        "Which planet is closest to the sun? [answer]",
        "The answer is (A) [answer].",
        "Options:\nA. Mercury\n[answer]",
        "[answer] and [answer]",
        "x" * 71 + "[answer]",
    ],
)
def test_a_copied_question_or_option_list_does_not(claim: str) -> None:
    assert not re.fullmatch(_pattern(), claim)
