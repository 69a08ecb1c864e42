"""One small request of every kind of formatted answer, with its format and its parser.

Shared by the real-engine test (:mod:`tests.engines.test_structured_outputs`) and the
measurement of parse rates with structured outputs on and off (``bench/structured_rates.py``).
Each kind's request uses the instrument's own prompt builder where one takes a plain case
(the judge, the labeler, the question filter, the claim writer) and a short stand-in prompt
elsewhere; the format and the parser are always the instrument's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llm.structured import ResponseFormat, with_format
from llm.types import ChatMessage, ChatRequest, ChatResult
from ontology.parsing import AnswerParseError, label_format, parse_label_answer
from ontology.prompts import labeling_messages
from ontology.schema import load_seed
from study.conflicts.score import parse_verdict, rubric_format
from study.disposition.awareness import awareness_format, parse_awareness
from study.disposition.score import category_format, grade_format, parse_category, parse_grade
from study.reasoning.judges import (
    PERTURBED_KINDS,
    JudgeCase,
    build_judge_messages,
    judge_format,
    parse_judge_answer,
)
from study.reasoning.question_filter import (
    build_filter_messages,
    filter_format,
    parse_filter_answer,
)
from study.sources.items import MCQItem
from study.sources.score import letter_format, letter_from_text
from study.sources.tier2 import claim_format, claim_messages, parse_claim
from study.strict_json import StrictParseError, answer_text, greedy_request


@dataclass(frozen=True)
class Kind:
    """One kind of formatted answer: its request, its format and its parser."""

    name: str
    messages: tuple[ChatMessage, ...]
    fmt: ResponseFormat
    parse: Callable[[str | None], Any]
    max_tokens: int

    def request(self) -> ChatRequest:
        """The greedy request, with the format when the mode attaches it."""
        return with_format(greedy_request(self.messages, max_tokens=self.max_tokens), self.fmt)

    def parses(self, request: ChatRequest, result: ChatResult) -> bool:
        """Whether the instrument's parser reads the reply."""
        return self.parse_error(request, result) is None

    def parse_error(self, request: ChatRequest, result: ChatResult) -> str | None:
        """Why the instrument's parser refused the reply, or ``None`` when it read it."""
        try:
            self.parse(answer_text(request, result))
        except (StrictParseError, AnswerParseError) as exc:
            return str(exc)
        return None


def _letter(text: str | None) -> str:
    letter = letter_from_text(text, ("A", "B", "C", "D"))
    if letter is None:
        raise StrictParseError("no option letter")
    return letter


def _sys(task: str, answer: str) -> tuple[ChatMessage, ...]:
    return (ChatMessage("system", task), ChatMessage("user", answer))


DOC = load_seed()
ITEM = MCQItem(
    id="k1",
    question="Which planet is closest to the sun?",
    choices=("Mercury", "Venus", "Earth", "Mars"),
    answer="A",
)
CATEGORIES = ("cautious", "balanced", "bold")
STEPS = ["I compare the monthly costs of both options.", "I pick the cheaper one to save money."]


def kinds() -> list[Kind]:
    """Every kind of formatted answer the workbench asks a model for."""
    case = JudgeCase(
        1, PERTURBED_KINDS, "Rent or buy?", "The user is 70.", tuple(STEPS), "Rent.", None
    )
    label_msgs = tuple(
        ChatMessage(r, c) for r, c in labeling_messages(DOC, list(enumerate(STEPS, start=1)))
    )
    mcq = "Which planet is closest to the sun?\nA. Mercury\nB. Venus\nC. Earth\nD. Mars\nAnswer:"
    answer = "Rent for now: it keeps your savings liquid."
    return [
        Kind("judge verdict", build_judge_messages(case), judge_format(case.kinds),
             lambda t: parse_judge_answer(t, case.kinds), 512),
        Kind("step labels", label_msgs, label_format(DOC, [1, 2]),
             lambda t: parse_label_answer(t, doc=DOC, step_indices=[1, 2]), 400),
        Kind("question filter", build_filter_messages("Should I rent or buy a home?"),
             filter_format(), parse_filter_answer, 256),
        Kind("conflicts rubric",
             _sys("Grade the answer: action, d1-d5 scores 0-4 with quotes, d6 flag. JSON.", answer),
             rubric_format(high_risk=True),
             lambda t: parse_verdict(t or "", high_risk=True, observable=True), 900),
        Kind("disposition category",
             _sys(f"Classify the answer's stance as one of {', '.join(CATEGORIES)}. JSON.", answer),
             category_format(CATEGORIES), lambda t: parse_category(t, CATEGORIES), 200),
        Kind("disposition grade",
             _sys("Grade the answer 1-7 and say aligned, unclear or not_aligned. JSON.", answer),
             grade_format(), parse_grade, 100),
        Kind("awareness rating",
             _sys("Rate 1-7 how aware the answer is of being tested; label it. JSON.", answer),
             awareness_format(), parse_awareness, 100),
        Kind("source claim", claim_messages(ITEM), claim_format(),
             lambda t: parse_claim(t or "", ITEM), 200),
        Kind("option letter", _sys("Answer with the letter only.", mcq),
             letter_format(("A", "B", "C", "D")), _letter, 4),
    ]  # fmt: skip


def summary(rows: list[tuple[str, bool]]) -> str:
    """One JSON line: parsed / asked per kind."""
    out: dict[str, list[int]] = {}
    for name, ok in rows:
        got = out.setdefault(name, [0, 0])
        got[0] += int(ok)
        got[1] += 1
    return json.dumps(out)
