"""The context-family abstraction: the memory line reproduces the reasoning prompt exactly."""

from __future__ import annotations

import pytest

from study.catalog.contexts import CONTEXT_FAMILIES, ContextFamily, MemoryLineContext
from study.prompts import INSTRUCTION, build_messages


@pytest.mark.parametrize("line", [None, "", "I am a nurse.", " ", "\n"])
def test_memory_line_family_is_the_reasoning_prompt(line: str | None) -> None:
    ctx = MemoryLineContext(condition="c", memory_line=line)
    rendered = ctx.render(system=INSTRUCTION, user_text="Why is the sky blue?", seed=7)
    assert rendered.messages == build_messages("Why is the sky blue?", line)
    assert rendered.family == "memory_line" and rendered.family in CONTEXT_FAMILIES
    assert rendered.condition == "c" and rendered.seed is None


def test_memory_line_without_system_message() -> None:
    rendered = MemoryLineContext("x", "Line.").render(system=None, user_text="Q?", seed=0)
    assert [m.role for m in rendered.messages] == ["user"]
    assert rendered.messages[0].content == "Line.\n\nQ?"


def test_memory_line_satisfies_the_protocol() -> None:
    assert isinstance(MemoryLineContext("baseline"), ContextFamily)
