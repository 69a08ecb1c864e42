"""A mock model: the simulator, except that a fixed share of cases answers prose.

No simulator preset breaks a classifier's reply on every attempt, so a test of "a parse
failure is never a verdict" wraps the simulator and makes chosen cases unreadable on the
first request and on the repair (their first user message decides, so both attempts of a
case agree). Everything else (storage, parsing, analysis, report) is the real code.
"""

from __future__ import annotations

import dataclasses
import hashlib

from llm.sim.backend import InProcessBackend, SimBackend
from llm.types import ChatBackend, ChatBatch, ChatRequest, ChatResult

PROSE = "I would rather not commit to one of those options; it depends on the situation."


def case_key(request: ChatRequest) -> str:
    """The first user message: the same for a case's first request and its repair."""
    return next((m.content for m in request.messages if m.role == "user"), "")


class MockGarbledBackend(ChatBackend):
    """The simulator ``preset`` (or an in-process simulator backend) whose replies to
    every ``every``-th case (by a hash of the case) are prose that no parser reads."""

    simulated = True

    def __init__(
        self,
        preset: str | InProcessBackend,
        *,
        every: int = 4,
        spec: str = "openai-api/mock/garbled",
    ) -> None:
        self.inner = SimBackend(preset) if isinstance(preset, str) else preset
        self.every = every
        self.spec = spec
        self.garbled: set[str] = set()

    def endpoint(self) -> str:
        return "mock://garbled"

    def garbles(self, request: ChatRequest) -> bool:
        """Whether this request's case answers prose."""
        digest = hashlib.sha256(case_key(request).encode("utf-8")).digest()
        return digest[0] % self.every == 0

    async def answer_batch(self, batch: ChatBatch) -> list[ChatResult]:
        return await batch.in_order(self.answer, yield_every=1)

    def answer(self, req: ChatRequest) -> ChatResult:
        out = self.inner.answer(req)
        if not self.garbles(req):
            return dataclasses.replace(out, model=self.spec)
        self.garbled.add(case_key(req))
        return dataclasses.replace(out, text=PROSE, model=self.spec)
