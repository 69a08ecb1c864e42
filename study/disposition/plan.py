"""Probes x arms x samples x attempts → chat requests (pure; the run loop is in generate.py).

One plan item is one (battery, stem, paraphrase, sample) of an arm; its key is what a
stored response fills, so a run resumes where it stopped. How an item becomes requests
depends on the arm's reasoning setting:

* ``on``: one request; the answer follows the reasoning block. A reply that runs out of
  tokens before an answer is *exhausted* and asked again (``attempt`` 1..3, each its own
  cached request, its own seed).
* ``off``: one request with ``chat_template_kwargs = {"enable_thinking": false}``; a reply
  that still holds a reasoning block is flagged.
* ``budget`` N (client-side two-phase route, after s1's budget forcing): phase 1 reasons
  with ``max_tokens = N`` and stop ``</think>``; phase 2 continues an assistant prefill
  ``<think>R</think>`` (``continue_final_message``) and writes the answer. Budget 0 is the
  reasoning-off prompt, never an empty reasoning block (the seed's rule).
* ``budget`` N on a vLLM server (``budget_route`` auto/server): one request with vLLM's
  ``thinking_token_budget = N``; a server without a reasoning configuration refuses it and
  the arm falls back to the client-side route above.
* ``filler`` N: phase 2 only, the reasoning replaced by N words of content-free filler
  (repeated ". " or a repeated "Let me think." line).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llm.seeds import stable_int
from llm.types import ChatMessage, ChatRequest, SamplingParams
from study.disposition.items import Probe

PROMPT_VERSION = "disposition-probe-v1"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
FILLERS: dict[str, str] = {"dots": ". ", "line": "Let me think.\n"}
_SEED_MODULUS = 2**31 - 1


@dataclass(frozen=True)
class Reasoning:
    """An arm's reasoning setting."""

    mode: str = "on"  # on | off | budget | filler
    budget: int | None = None  # reasoning words for budget / filler
    filler: str = "dots"

    @property
    def effective_mode(self) -> str:
        """``off`` for budget 0 (the reasoning-off prompt), else the mode."""
        if self.mode == "budget" and (self.budget or 0) <= 0:
            return "off"
        return self.mode

    @property
    def label(self) -> str:
        """Short label for reports (``on``, ``off``, ``budget 256``, ``filler 256``)."""
        if self.mode in ("budget", "filler"):
            return f"{self.mode} {self.budget or 0}"
        return self.mode

    @classmethod
    def parse(cls, text: str) -> Reasoning:
        """``on``, ``off``, ``budget:N`` or ``filler:N[:dots|line]``.

        Raises:
            ValueError: anything else.
        """
        parts = text.strip().lower().split(":")
        if parts == ["on"] or parts == ["off"]:
            return cls(parts[0])
        if parts[0] in ("budget", "filler") and len(parts) >= 2 and parts[1].isdigit():
            filler = parts[2] if len(parts) > 2 else "dots"
            if parts[0] == "filler" and filler not in FILLERS:
                raise ValueError(f"filler must be one of {', '.join(FILLERS)}, not {filler!r}")
            return cls(parts[0], int(parts[1]), filler)
        raise ValueError(f"reasoning must be on, off, budget:N or filler:N, not {text!r}")


@dataclass(frozen=True)
class PlanItem:
    """One probe sample of one arm."""

    probe: Probe
    sample: int
    seed: int

    @property
    def key(self) -> tuple[str, str, int, int]:
        """``(battery, stem, paraphrase, sample)``: the stored response this fills."""
        return (self.probe.battery, self.probe.stem, self.probe.paraphrase, self.sample)


def item_seed(probe: Probe, sample: int) -> int:
    """The sampling seed of one probe sample (the same for every arm: arms differ by model)."""
    return stable_int("disposition-request", probe.key, sample) % _SEED_MODULUS


def build_plan(probes: list[Probe] | tuple[Probe, ...], *, samples: int) -> list[PlanItem]:
    """Every probe x sample (samples numbered from 1, as the null test reads them)."""
    return [PlanItem(p, s, item_seed(p, s)) for p in probes for s in range(1, samples + 1)]


def _base(item: PlanItem, sampling: SamplingParams, attempt: int, max_tokens: int) -> ChatRequest:
    return ChatRequest(
        messages=(ChatMessage(role="user", content=item.probe.text),),
        sampling=sampling.model_copy(update={"seed": item.seed, "max_tokens": max_tokens}),
        sample_index=item.sample,
        attempt=attempt or None,  # the first ask keeps the plain key; re-asks 1..3 differ
        tag=item.key,
    )


def first_request(
    item: PlanItem, reasoning: Reasoning, sampling: SamplingParams, attempt: int
) -> ChatRequest:
    """The first (or only) request of an item: reasoning phase or the whole answer."""
    mode = reasoning.effective_mode
    if mode == "off":
        return replace(
            _base(item, sampling, attempt, sampling.max_tokens),
            chat_template_kwargs={"enable_thinking": False},
        )
    if mode == "budget":
        return replace(
            _base(item, sampling, attempt, int(reasoning.budget or 0)), stop=(THINK_CLOSE,)
        )
    if mode == "filler":
        return answer_request(item, filler_text(reasoning), sampling, attempt)
    return _base(item, sampling, attempt, sampling.max_tokens)


def server_budget_request(
    item: PlanItem, reasoning: Reasoning, sampling: SamplingParams, attempt: int
) -> ChatRequest:
    """The budget route on the server: one request with vLLM's ``thinking_token_budget``.

    vLLM counts the reasoning tokens itself and forces the end-of-reasoning marker when the
    budget is spent, then the model writes its answer within ``max_tokens``.
    """
    return replace(
        _base(item, sampling, attempt, sampling.max_tokens),
        thinking_token_budget=int(reasoning.budget or 0),
    )


def filler_text(reasoning: Reasoning) -> str:
    """``budget`` words of content-free filler."""
    unit = FILLERS[reasoning.filler]
    words = len(unit.split())
    return (unit * ((reasoning.budget or 0) // max(words, 1) + 1)).strip()


def reasoning_of(text: str) -> str:
    """The reasoning written in a phase-1 reply (without the block markers)."""
    body = text.split(THINK_OPEN, 1)[1] if THINK_OPEN in text else text
    return body.split(THINK_CLOSE, 1)[0].strip()


def answer_request(
    item: PlanItem, reasoning_text: str, sampling: SamplingParams, attempt: int
) -> ChatRequest:
    """Phase 2: continue the assistant prefill ``<think>R</think>`` with the answer."""
    prefill = f"{THINK_OPEN}\n{reasoning_text}\n{THINK_CLOSE}\n\n"
    base = _base(item, sampling, attempt, sampling.max_tokens)
    return replace(
        base,
        messages=(*base.messages, ChatMessage(role="assistant", content=prefill)),
        continue_final_message=True,
        add_generation_prompt=False,
    )


@dataclass(frozen=True)
class ParsedAnswer:
    """The final answer of a reply and what the reasoning bookkeeping needs."""

    answer: str | None
    exhausted: bool
    reasoning_block: bool
    reasoning_words: int


def parse_answer(text: str | None, finish_reason: str | None) -> ParsedAnswer:
    """Split a reply into reasoning and final answer.

    Exhausted: the tokens ran out (``finish_reason == "length"``) before an answer, i.e.
    inside an unclosed reasoning block or with nothing after it.
    """
    body = text or ""
    block = THINK_OPEN in body or THINK_CLOSE in body
    if THINK_CLOSE in body:
        head, answer = body.rsplit(THINK_CLOSE, 1)
        words = len(head.replace(THINK_OPEN, " ").split())
    elif THINK_OPEN in body:
        head, answer = body, ""
        words = len(head.replace(THINK_OPEN, " ").split())
    else:
        answer, words = body, 0
    answer = answer.strip()
    exhausted = finish_reason == "length" and (
        not answer or (THINK_OPEN in body and THINK_CLOSE not in body)
    )
    return ParsedAnswer(answer or None, exhausted, block, words)
