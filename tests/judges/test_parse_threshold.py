"""A judge whose replies do not parse stops the run with the share and three examples.

Below the threshold every unreadable case is still passed on (stored as an error) and the
run goes on: a few bad replies are data, most of them are a broken judge.
"""

from __future__ import annotations

from typing import Any

import pytest

from llm.types import ChatMessage
from study.strict_json import (
    PARSE_FAILURE_MAX,
    JudgeUnreadable,
    StrictParseError,
    extract_json_object,
    run_with_repair,
)
from tests.scripted_backend import ScriptedBackend


def _parse(_i: int, text: str) -> int:
    return int(extract_json_object(text)["score"])


def _judge(broken: set[int], n: int) -> tuple[list[tuple[int, Any]], ScriptedBackend]:
    def script(messages: list[tuple[str, str]]) -> str:
        case = int(messages[1][1])
        return f"garbage\n\x1b[31mreply {case}" if case in broken else '{"score": 3}'

    backend = ScriptedBackend(script)
    got: list[tuple[int, Any]] = []
    run_with_repair(
        backend,
        [(ChatMessage("system", "Score it."), ChatMessage("user", str(i))) for i in range(n)],
        max_tokens=20,
        parse=_parse,
        repair_message=lambda _i, exc: f"Answer with JSON only ({exc}).",
        on_answer=lambda i, value, _raws, _err: got.append((i, value)),
        session=None,
        concurrency=4,
    )
    return got, backend


def test_a_judge_that_never_parses_stops_with_share_and_examples() -> None:
    got: list[tuple[int, Any]] = []
    with pytest.raises(JudgeUnreadable) as caught:
        got, _ = _judge(set(range(200)), 200)
    message = str(caught.value)
    assert "20 of 20 cases (100%" in message and "\n" not in message
    # three examples, control characters shown, not sent to the terminal
    assert message.count("'garbage \\x1b[31mreply") == 3 and "\x1b" not in message
    assert got == []  # nothing stored: the errors were held until the check


def test_a_few_unreadable_replies_are_kept_as_errors() -> None:
    broken = set(range(0, 40, 4))  # 25%
    assert len(broken) / 40 <= PARSE_FAILURE_MAX
    got, _ = _judge(broken, 40)
    assert sorted(i for i, v in got if v is None) == sorted(broken)
    assert len(got) == 40


def test_a_small_study_with_mostly_unreadable_replies_stops_at_the_end() -> None:
    with pytest.raises(JudgeUnreadable, match=r"4 of 6 cases \(67%"):
        _judge({0, 1, 2, 3}, 6)


def test_strict_parse_error_is_what_the_parser_raises() -> None:
    with pytest.raises(StrictParseError):
        _parse(0, "no json")
