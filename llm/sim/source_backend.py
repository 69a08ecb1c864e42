"""The in-process backend answering source-reliance probes from a behaviour preset.

``SourceSimBackend`` answers letter probes the way :mod:`llm.sim.sources` says a model of
the preset's behaviour type would: the reply is the letter (a continuation such as ``" B"``
after an ``"Answer:"`` prefill) and, when asked, the logprobs at that position hold every
option letter (up to ``top_logprobs``), consistent with the letter chosen. What a probe
asserts is read from the prompt by ``parse_probe``, which the layer that rendered the
prompt passes in (``llm`` knows nothing of the templates), as the catalog passes its
memory-line classifier to the drift simulator. A request it cannot read is answered with
no letter at all, as a confused model would.

Stage-1 reasoning requests (no ``"Answer:"`` cue anywhere) get a short neutral reasoning
text, so the two-stage route runs end to end offline.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from llm.sim.backend import InProcessBackend
from llm.sim.sources import Probe, SourcePreset, get_source_preset, simulate_probe
from llm.types import ChatMessage, ChatRequest, ChatResult, TokenLogprob

ProbeParser = Callable[[Sequence[ChatMessage]], Probe | None]
_CUE = "Answer:"
_REASONING = "Weighing each option in turn against the question, without settling on one."


class SourceSimBackend(InProcessBackend):
    """``sim/src-<preset>``: letter answers and logprobs from a source-reliance preset.

    Args:
        preset: A :class:`SourcePreset` or its name (``src-paper``, ``src-rigid``, ...).
        parse_probe: Reads the item and its assertions from a request's messages.
    """

    def __init__(self, preset: SourcePreset | str, *, parse_probe: ProbeParser) -> None:
        self.preset = get_source_preset(preset) if isinstance(preset, str) else preset
        self.spec = f"sim/{self.preset.name}"
        self._parse = parse_probe

    def endpoint(self) -> str:
        """``sim:sources@v<version>`` (the preset version is in the cache key)."""
        return f"sim:sources@v{self.preset.version}"

    def answer(self, request: ChatRequest) -> ChatResult:
        """Answer one request synchronously."""
        start = time.perf_counter()
        msgs = request.messages
        cued = any(_CUE in m.content for m in msgs if m.role in ("user", "assistant"))
        probe = self._parse(msgs) if cued else None
        logprobs: tuple[TokenLogprob, ...] | None = None
        if not cued:
            text = _REASONING
        elif probe is None:
            text = " ?"
            if request.wants_logprobs():
                logprobs = (TokenLogprob(" ?", -0.05, ((" ?", -0.05), (" I", -3.0))),)
        else:
            ans = simulate_probe(probe, self.preset, seed=request.sampling.seed)
            text = f" {ans.letter}"
            if request.wants_logprobs():
                k = request.top_logprobs or 0
                top = tuple((f" {tok}", lp) for tok, lp in ans.top_logprobs()[:k])
                logprobs = (TokenLogprob(text, math.log(ans.probs[ans.choice]), top),)
        if msgs and msgs[-1].role == "user" and cued:
            text = text.lstrip()
        return ChatResult(
            text=text,
            finish_reason="stop",
            prompt_tokens=sum(len(m.content.split()) for m in msgs),
            completion_tokens=len(text.split()),
            latency_ms=(time.perf_counter() - start) * 1000.0,
            error=None,
            cached=False,
            cache_key="",
            attempts=1,
            model=self.spec,
            simulated=True,
            seed=request.sampling.seed,
            logprobs=logprobs,
        )
