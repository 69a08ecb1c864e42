"""A chat backend that counts the requests it passes on: what a re-run sends, checked."""

from __future__ import annotations

from llm.types import ChatBackend, ChatBatch, ChatResult


class CountingBackend(ChatBackend):
    """Wraps a real backend (usually the simulator) and counts what is sent through it.

    Attributes:
        spec: The wrapped backend's spec.
        simulated: Whether the wrapped backend is simulated.
        sent: How many requests have been sent so far (cache hits never reach here).
    """

    def __init__(self, inner: ChatBackend) -> None:
        """Wrap ``inner``; nothing sent yet."""
        self._inner = inner
        self.spec = inner.spec
        self.simulated = inner.simulated
        self.sent = 0

    def endpoint(self) -> str:
        """The wrapped backend's endpoint."""
        return self._inner.endpoint()

    async def answer_batch(self, batch: ChatBatch) -> list[ChatResult]:
        """Count the requests, then let the wrapped backend answer them."""
        self.sent += len(batch.requests)
        return await self._inner.answer_batch(batch)
