"""The in-process ``sim/<preset>`` backend: no network, deterministic, known doses."""

from __future__ import annotations

import time

from llm.seeds import request_seed
from llm.sim.chat import simulate_reply
from llm.sim.extras import SimExtras
from llm.sim.presets import SimPreset
from llm.sim.registry import get_preset
from llm.sim.response import Classifier
from llm.types import ChatBackend, ChatBatch, ChatRequest, ChatResult, TokenLogprob


class InProcessBackend(ChatBackend):
    """Skeleton of a backend that answers in the calling process, one request at a time.

    A subclass sets ``spec`` and implements :meth:`answer` and ``endpoint``; a batch is
    answered in order, yielding to the event loop every 64 requests so progress callbacks
    and cancellation get through (``concurrency`` is irrelevant in-process).
    """

    spec: str
    simulated = True

    def answer(self, request: ChatRequest) -> ChatResult:
        """Answer one request synchronously."""
        raise NotImplementedError

    def result(
        self,
        request: ChatRequest,
        text: str | None,
        *,
        started: float,
        seed: int | None,
        finish_reason: str | None = "stop",
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        logprobs: tuple[TokenLogprob, ...] | None = None,
        error: str | None = None,
    ) -> ChatResult:
        """The result of an answer given in-process: one attempt, simulated, not cached here.

        Args:
            request: The request answered.
            text: The reply (``None`` with ``error``).
            started: ``time.perf_counter()`` when answering began.
            seed: The sampling seed the answer used.
            finish_reason: Why the reply ended.
            prompt_tokens: Defaults to the words of the request's messages.
            completion_tokens: Defaults to the words of ``text``.
            logprobs: Per-token logprobs, when asked for.
            error: Why the request is refused (a ``bad_request``).
        """
        if prompt_tokens is None:
            prompt_tokens = sum(len(m.content.split()) for m in request.messages)
        if completion_tokens is None:
            completion_tokens = len(text.split()) if text else 0
        return ChatResult(
            text=text,
            finish_reason=finish_reason,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            error=error,
            cached=False,
            cache_key="",
            attempts=1,
            model=self.spec,
            simulated=True,
            error_kind="bad_request" if error else None,
            seed=seed,
            logprobs=logprobs,
        )

    async def answer_batch(self, batch: ChatBatch) -> list[ChatResult]:
        """Answer every request in order (``concurrency`` is irrelevant in-process)."""
        return await batch.in_order(self.answer)


class SimBackend(InProcessBackend):
    """Answers chat requests with the simulator (:mod:`llm.sim.chat`) in the calling process.

    Every answer depends only on (preset, messages, sample index, seed): two runs of the
    same batch give identical text, and ``ChatResult.simulated`` is always True.

    Args:
        preset: A preset or its name (``default``, ``null``, ``strong``).
        classify_memory: Optional classifier of memory lines (e.g. from the study catalog).
    """

    def __init__(
        self, preset: SimPreset | str = "default", *, classify_memory: Classifier | None = None
    ) -> None:
        self.preset = get_preset(preset) if isinstance(preset, str) else preset
        self.spec = f"sim/{self.preset.name}"
        self._classify = classify_memory

    def endpoint(self) -> str:
        """Return ``sim:in-process@v<version>`` (the preset version is in the cache key)."""
        return f"sim:in-process@v{self.preset.version}"

    def answer(self, request: ChatRequest) -> ChatResult:
        """Answer one request synchronously."""
        start = time.perf_counter()
        seed = request_seed(request)
        # No max_tokens cut in-process (unlike the server): stored simulator answers of
        # earlier runs stay what they were.
        out = simulate_reply(
            [(m.role, m.content) for m in request.messages],
            preset=self.preset,
            sample_index=request.sample_index,
            seed=seed,
            extras=SimExtras.from_request(request),
            classify_memory=self._classify,
        )
        return self.result(
            request,
            out.text,
            started=start,
            seed=seed,
            finish_reason=out.finish_reason,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            logprobs=out.logprobs,
        )
