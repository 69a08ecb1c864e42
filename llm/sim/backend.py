"""The in-process ``sim/<preset>`` backend: no network, deterministic, known doses."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from llm.seeds import request_seed
from llm.sim.chat import simulate_reply
from llm.sim.extras import SimExtras
from llm.sim.presets import SimPreset
from llm.sim.registry import get_preset
from llm.sim.response import Classifier
from llm.types import ChatRequest, ChatResult, ResultCallback


class InProcessBackend:
    """Skeleton of a backend that answers in the calling process, one request at a time.

    A subclass sets ``spec`` and implements :meth:`answer` and ``endpoint``; :meth:`achat`
    answers a batch in order and yields to the event loop every 64 requests so progress
    callbacks and cancellation get through (``concurrency`` is irrelevant in-process).
    """

    spec: str
    simulated = True

    def answer(self, request: ChatRequest) -> ChatResult:
        """Answer one request synchronously."""
        raise NotImplementedError

    async def achat(
        self,
        requests: Sequence[ChatRequest],
        *,
        concurrency: int,
        on_result: ResultCallback | None = None,
    ) -> list[ChatResult]:
        """Answer every request in order (``concurrency`` is irrelevant in-process)."""
        results: list[ChatResult] = []
        for i, req in enumerate(requests):
            res = self.answer(req)
            results.append(res)
            if on_result is not None:
                on_result(i, req, res)
            if i % 64 == 63:
                await asyncio.sleep(0)  # let progress callbacks and cancellation through
        return results


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
        return ChatResult(
            text=out.text,
            finish_reason=out.finish_reason,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            latency_ms=(time.perf_counter() - start) * 1000.0,
            error=None,
            cached=False,
            cache_key="",
            attempts=1,
            model=self.spec,
            simulated=True,
            seed=seed,
            logprobs=out.logprobs,
        )
