"""Fixtures for filter and judge tests: scripted and counting backends (sessions and the CLI
runner come from tests/conftest.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from llm.types import ChatRequest, ChatResult, ResultCallback

Script = Callable[[list[tuple[str, str]]], str | None]


class ScriptedBackend:
    """A backend whose reply to a conversation is ``script(messages)`` (``None`` = failure).

    Counts requests, so tests can check what a re-run sends.
    """

    simulated = True

    def __init__(self, script: Script, spec: str = "openai-api/scripted/judge") -> None:
        self.script = script
        self.spec = spec
        self.requests: list[list[tuple[str, str]]] = []

    def endpoint(self) -> str:
        return "scripted://test"

    async def achat(
        self,
        requests: Sequence[ChatRequest],
        *,
        concurrency: int,
        on_result: ResultCallback | None = None,
    ) -> list[ChatResult]:
        out: list[ChatResult] = []
        for i, req in enumerate(requests):
            messages = [(m.role, m.content) for m in req.messages]
            self.requests.append(messages)
            text = self.script(messages)
            start = time.perf_counter()
            res = ChatResult(
                text=text,
                finish_reason="stop" if text is not None else None,
                prompt_tokens=1,
                completion_tokens=1,
                latency_ms=(time.perf_counter() - start) * 1000,
                error=None if text is not None else "scripted failure",
                cached=False,
                cache_key="",
                attempts=1,
                model=self.spec,
                simulated=True,
                error_kind=None if text is not None else "server",
            )
            out.append(res)
            if on_result is not None:
                on_result(i, req, res)
            await asyncio.sleep(0)
        return out


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
