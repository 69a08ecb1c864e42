"""A chat backend whose replies a test scripts: what a judge or a rewriter is sent, and says."""

from __future__ import annotations

import time
from collections.abc import Callable

from llm.types import ChatBackend, ChatBatch, ChatRequest, ChatResult

Script = Callable[[list[tuple[str, str]]], str | None]


class ScriptedBackend(ChatBackend):
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

    async def answer_batch(self, batch: ChatBatch) -> list[ChatResult]:
        return await batch.in_order(self.answer, yield_every=1)

    def answer(self, req: ChatRequest) -> ChatResult:
        messages = [(m.role, m.content) for m in req.messages]
        self.requests.append(messages)
        text = self.script(messages)
        start = time.perf_counter()
        return ChatResult(
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
