"""Fixtures for filter and judge tests: a simulator-call recorder (the scripted backend is
tests/scripted_backend.py; sessions and the CLI runner come from tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def sim_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every conversation the simulator answers (in-process and over HTTP)."""
    import llm.sim.chat
    from llm.sim.chat import simulate_chat

    calls: list[str] = []

    def counted(messages: Any, **kwargs: Any) -> Any:
        calls.append(messages[-1][1])
        return simulate_chat(messages, **kwargs)

    # Both the in-process backend and the server answer through simulate_reply, which
    # calls llm.sim.chat.simulate_chat.
    monkeypatch.setattr(llm.sim.chat, "simulate_chat", counted)
    return calls
