"""Simulated models answering source-reliance probes: in-process and over HTTP.

``SourceSimBackend`` answers letter probes the way :mod:`study.sources.sim.probe` says a model of
the preset's behaviour type would: the reply is the letter (a continuation such as ``" B"``
after an ``"Answer:"`` prefill) and, when asked, the logprobs at that position hold every
option letter (up to ``top_logprobs``), consistent with the letter chosen, and are filled up
to ``top_logprobs`` with improbable non-letter tokens, as a real engine's top-k is. What a probe
asserts is read from the prompt by ``parse_probe``, which the layer that rendered the
prompt passes in (``llm`` knows nothing of the templates), as the catalog passes its
memory-line classifier to the drift simulator. A request it cannot read is answered with
no letter at all, as a confused model would.

:class:`SourceRoute` gives exactly the same replies through the simulator server
(``create_app(model_routes=...)``) in the OpenAI wire format, logprobs included, so the
real ``openai`` client and the logprob parser are exercised end to end.

Stage-1 reasoning requests (no ``"Answer:"`` cue anywhere) get a short neutral reasoning
text, so the two-stage route runs end to end offline.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm.sim.backend import InProcessBackend
from llm.sim.hostile import HOSTILE_TEXT
from llm.sim.wire import choice_json, completion_json
from llm.specs import preset_name
from llm.types import ChatMessage, ChatRequest, ChatResult, TokenLogprob
from study.sources.sim.probe import Probe, SourcePreset, get_source_preset, simulate_probe

ProbeParser = Callable[[Sequence[ChatMessage]], Probe | None]
_CUE = "Answer:"
_REASONING = "Weighing each option in turn against the question, without settling on one."
MODEL_PREFIX = "src-"
#: Non-letter tokens filling a top-k list past the letters (each below the last letter).
_FILLER = (
    " The", " It", " Option", " Answer", " None", " Both", " All", " This", " That", " We",
    " Let", " So", " Yes", " No", " Not", " In", " To", " Of", " An", " Is", " As",
)  # fmt: skip


def _filled(top: Sequence[tuple[str, float]], k: int) -> tuple[tuple[str, float], ...]:
    """``top`` (best first) cut to ``k`` entries, or filled up to ``k`` below its last."""
    floor = min((lp for _, lp in top), default=0.0)
    filler = [(tok, floor - 10.0 - i) for i, tok in enumerate(_FILLER)]
    return tuple([*top, *filler][:k])


@dataclass(frozen=True)
class SourceReply:
    """A simulated completion: text and (when asked) the logprobs of its first token."""

    text: str
    logprobs: tuple[TokenLogprob, ...] | None


def source_reply(
    messages: Sequence[ChatMessage],
    *,
    preset: SourcePreset,
    parse_probe: ProbeParser,
    seed: int | None,
    top_logprobs: int | None,
) -> SourceReply:
    """The reply of a ``src-*`` model to one conversation (``top_logprobs=None``: none)."""
    cued = any(_CUE in m.content for m in messages if m.role in ("user", "assistant"))
    probe = parse_probe(messages) if cued else None
    logprobs: tuple[TokenLogprob, ...] | None = None
    if not cued:
        text = _REASONING
    elif probe is None:
        text = " ?"
        if top_logprobs is not None:
            top = _filled(((" ?", -0.05), (" I", -3.0)), top_logprobs)
            logprobs = (TokenLogprob(" ?", -0.05, top),)
    else:
        ans = simulate_probe(probe, preset, seed=seed)
        # a hostile preset's text after the letter: read as the same letter, stored as text
        text = f" {ans.letter} {HOSTILE_TEXT}" if preset.hostile else f" {ans.letter}"
        if top_logprobs is not None:
            top = _filled([(f" {tok}", lp) for tok, lp in ans.top_logprobs()], top_logprobs)
            logprobs = (TokenLogprob(text, math.log(ans.probs[ans.choice]), top),)
    if messages and messages[-1].role == "user" and cued:
        # no prefill: the reply starts the assistant turn (no leading space)
        text = text.lstrip()
        if logprobs:
            t = logprobs[0]
            logprobs = (TokenLogprob(t.token.lstrip(), t.logprob, t.top),)
    return SourceReply(text, logprobs)


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
        k = (request.top_logprobs or 0) if request.wants_logprobs() else None
        out = source_reply(
            request.messages,
            preset=self.preset,
            parse_probe=self._parse,
            seed=request.sampling.seed,
            top_logprobs=k,
        )
        return self.result(
            request, out.text, started=start, seed=request.sampling.seed, logprobs=out.logprobs
        )


class SourceRoute:
    """Answers OpenAI chat bodies for ``src-*`` models (a simulator-server model route).

    Args:
        parse_probe: Reads the item and its assertions from the messages.
    """

    def __init__(self, parse_probe: ProbeParser) -> None:
        self._parse = parse_probe

    def __call__(self, model: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """The OpenAI response JSON for a ``src-*`` model, ``None`` for any other model."""
        name = preset_name(str(model))
        if not name.startswith(MODEL_PREFIX):
            return None
        preset = get_source_preset(name)
        messages = tuple(
            ChatMessage(str(m.get("role", "")), str(m.get("content") or ""))
            for m in body.get("messages") or []
            if isinstance(m, dict)
        )
        seed = body.get("seed")
        k = int(body.get("top_logprobs") or 0) if body.get("logprobs") else None
        out = source_reply(
            messages,
            preset=preset,
            parse_probe=self._parse,
            seed=seed if isinstance(seed, int) else secrets.randbits(31),
            top_logprobs=k,
        )
        return completion_json(
            f"sim/{name}",
            [choice_json(0, out.text, "stop", out.logprobs)],
            prompt_tokens=sum(len(m.content.split()) for m in messages),
            completion_tokens=len(out.text.split()),
        )
