"""The request extras as the simulator honours them (shared by the backend and the server).

Real engines do these things; the simulator does the same in a simple, seeded way so
offline tests exercise the whole path:

- **assistant-prefill continuation** (``continue_final_message``): the conversation ends
  with an assistant message; the reply continues it and contains only the new text;
- **chat-template switches** (``chat_template_kwargs``): ``enable_thinking: false``
  drops the ``<think>`` block, as Qwen3-style templates make the model skip reasoning;
- **stop sequences**: the reply ends before the first stop string;
- **logprobs**: one entry per token of the text actually returned, the chosen token
  best at its position (so greedy decoding would pick it) and ``k`` seeded alternatives.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm.seeds import stable_int
from llm.structured import ResponseFormat
from llm.types import ChatRequest, TokenLogprob

MAX_TOP_LOGPROBS = 20  # the OpenAI API's bound, which vLLM's server also applies

# Words plus single punctuation marks, each with its leading whitespace: "<answer>B" is
# "<", "answer", ">", "B", so an answer letter is a token of its own as in real tokenizers.
_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+$")
_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_LETTERS = "ABCDEFGHIJ"
_FILLER = (" the", " a", ",", ".", " and", " to", " of", " is", " it", " that", " in", " I")


@dataclass(frozen=True)
class SimExtras:
    """What a request asked for beyond the plain completion."""

    top_logprobs: int | None = None  # None: no logprobs; 0: only the chosen tokens'
    stop: tuple[str, ...] = ()
    continue_final_message: bool = False
    enable_thinking: bool | None = None
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    # The structured output format asked for (issue 36), honoured by llm.sim.structured.
    response_format: ResponseFormat | None = None

    @classmethod
    def from_request(cls, request: ChatRequest) -> SimExtras:
        """The extras of an in-process request."""
        k = None
        if request.wants_logprobs():
            k = request.top_logprobs or 0
        kwargs = dict(request.chat_template_kwargs or {})
        thinking = kwargs.get("enable_thinking")
        return cls(
            top_logprobs=k,
            stop=tuple(request.stop or ()),
            continue_final_message=bool(request.continue_final_message),
            enable_thinking=None if thinking is None else bool(thinking),
            template_kwargs=kwargs,
            response_format=request.response_format,
        )


def split_prefill(
    messages: Sequence[tuple[str, str]], extras: SimExtras
) -> tuple[list[tuple[str, str]], str]:
    """Separate an assistant prefill from the conversation the simulator answers.

    Returns:
        ``(messages, prefix)``: without continuation, the messages unchanged and ``""``.
    """
    msgs = list(messages)
    if extras.continue_final_message and msgs and msgs[-1][0] == "assistant":
        return msgs[:-1], msgs[-1][1]
    return msgs, ""


def continue_text(full: str, prefix: str) -> str:
    """The part of a complete reply that continues ``prefix`` (what an engine returns).

    When the reply starts with the prefix, the rest of it; otherwise the whole reply,
    separated by a space when the prefix ends in a non-space (``"Answer:"`` + ``" B"``).
    """
    if not prefix:
        return full
    if full.startswith(prefix):
        return full[len(prefix) :]
    if prefix[-1:].isspace() or full[:1].isspace():
        return full
    return " " + full


def apply_template_switches(text: str, extras: SimExtras) -> str:
    """``enable_thinking: false`` removes ``<think>`` blocks; nothing else changes the text."""
    if extras.enable_thinking is False:
        return _THINK_BLOCK.sub("", text)
    return text


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the earliest stop string; return ``(text, stopped)``."""
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
    if cut < 0:
        return text, False
    return text[:cut], True


def tokenize(text: str) -> list[str]:
    """Split text into simulator tokens that concatenate back to exactly ``text``."""
    tokens = _TOKEN.findall(text)
    assert "".join(tokens) == text  # every character belongs to one token
    return tokens


def sim_logprobs(text: str, *, seed: int, top_k: int) -> tuple[TokenLogprob, ...]:
    """Seeded token logprobs of ``text``, consistent with it being the text chosen.

    Each token is the most likely one at its position (probability drawn in
    [0.35, 0.97]); its ``top_k`` list holds it first and ``top_k - 1`` alternatives that
    share part of the remaining mass in decreasing order. An answer letter's alternatives
    are the other letters, so a multiple-choice position yields a distribution over
    choices as a real model's would.

    Args:
        text: The reply text returned.
        seed: Seed of the draw (same seed and text, same logprobs).
        top_k: Alternatives per position (0: only the chosen token's logprob).
    """
    rng = random.Random(stable_int("sim-logprobs", seed, text))
    out: list[TokenLogprob] = []
    for token in tokenize(text):
        p = rng.uniform(0.35, 0.97)
        top: list[tuple[str, float]] = []
        if top_k > 0:
            top.append((token, math.log(p)))
            rest = 1.0 - p
            for alt in _alternatives(token, top_k - 1, rng):
                # Each alternative takes a share of what is left, so the list stays sorted
                # and the total stays below 1 (the tail of the vocabulary holds the rest).
                share = rest * rng.uniform(0.3, 0.6)
                share = min(share, math.exp(top[-1][1]) * 0.999)
                rest -= share
                top.append((alt, math.log(share)))
        out.append(TokenLogprob(token, math.log(p), tuple(top)))
    return tuple(out)


def _alternatives(token: str, n: int, rng: random.Random) -> list[str]:
    if n <= 0:
        return []
    lead = token[: len(token) - len(token.lstrip())]
    core = token.strip()
    if len(core) == 1 and core in _LETTERS:
        pool = [lead + c for c in _LETTERS[:5] if c != core]
        rng.shuffle(pool)
        pool += [c for c in _FILLER if c not in pool]
    else:
        pool = [c for c in _FILLER if c != token]
        rng.shuffle(pool)
    pool += [f"{lead}<alt{i}>" for i in range(n)]  # never runs out, never equals a word
    return pool[:n]
