"""Chat-level glue shared by the in-process backend and the HTTP server."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llm.sim.extras import (
    SimExtras,
    apply_stop,
    apply_template_switches,
    continue_text,
    sim_logprobs,
    split_prefill,
)
from llm.sim.presets import SimPreset
from llm.sim.registry import stepped_responder
from llm.sim.response import Classifier, SimResponse
from llm.sim.structured import conform_text
from llm.sim.tasks import Answerer, answer_task
from llm.types import TokenLogprob


@dataclass(frozen=True)
class SimChatAnswer:
    """A simulated chat completion with its usage counts."""

    response: SimResponse
    prompt_tokens: int
    completion_tokens: int


def word_count(text: str) -> int:
    """Approximate a token count by whitespace-separated words (the simulator has no tokenizer)."""
    return len(text.split())


def simulate_chat(
    messages: Sequence[tuple[str, str]],
    *,
    preset: SimPreset,
    sample_index: int,
    seed: int | None,
    classify_memory: Classifier | None = None,
    answerers: Sequence[Answerer] = (),
) -> SimChatAnswer:
    """Answer a conversation with the simulator.

    Args:
        messages: ``(role, content)`` pairs.
        preset: The simulator preset.
        sample_index: Repeated-sample index.
        seed: The sampling seed.
        classify_memory: Optional catalog-based classifier of memory lines.
        answerers: Extra answerers for requests of layers above ``llm`` (see
            :data:`llm.sim.tasks.Answerer`).
    """
    # Task requests (question filter, judge) carry a marker in the system message and are
    # answered by their registered handler instead of a stepped response (llm.sim.tasks);
    # both the in-process backend and the HTTP server come through here.
    task = answer_task(
        messages, preset=preset, sample_index=sample_index, seed=seed, answerers=answerers
    )
    if task is not None:
        prompt_tokens = sum(word_count(content) for _, content in messages)
        return SimChatAnswer(task, prompt_tokens, word_count(task.text))

    # every other request asks for a stepped answer: the registered responder's (reasoning
    # drift's, study/reasoning/sim, which llm may not import)
    resp = stepped_responder()(
        messages,
        preset=preset,
        sample_index=sample_index,
        seed=seed,
        classify_memory=classify_memory,
    )
    prompt_tokens = sum(word_count(content) for _, content in messages)
    return SimChatAnswer(resp, prompt_tokens, word_count(resp.text))


@dataclass(frozen=True)
class SimReply:
    """A simulated completion after the request extras were applied (what is returned)."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    logprobs: tuple[TokenLogprob, ...] | None


def simulate_reply(
    messages: Sequence[tuple[str, str]],
    *,
    preset: SimPreset,
    sample_index: int,
    seed: int | None,
    extras: SimExtras,
    max_tokens: int | None = None,
    classify_memory: Classifier | None = None,
    answerers: Sequence[Answerer] = (),
) -> SimReply:
    """Answer a conversation honouring the request extras (see :mod:`llm.sim.extras`).

    Order, as in an engine: the prefill is split off and the conversation answered; the
    chat-template switches shape the reply; only the continuation of the prefill is
    kept; the reply stops at the first stop string or after ``max_tokens`` words; the
    logprobs describe exactly the text returned.
    """
    convo, prefix = split_prefill(messages, extras)
    if extras.response_format is not None:
        # Constrained decoding never breaks the syntax: no malformed draws, and the reply
        # is cut down to what the format allows (llm.sim.structured).
        preset = preset.model_copy(update={"malformed_rate": 0.0})
    out = simulate_chat(
        convo,
        preset=preset,
        sample_index=sample_index,
        seed=seed,
        classify_memory=classify_memory,
        answerers=answerers,
    )
    text = apply_template_switches(out.response.text, extras)
    text = conform_text(text, extras.response_format) or ""
    text = continue_text(text, prefix)
    text, stopped = apply_stop(text, extras.stop)
    cut = False
    if max_tokens is not None:
        text, cut = truncate_words(text, max_tokens)
    logprobs = None
    if extras.top_logprobs is not None:
        logprobs = sim_logprobs(text, seed=seed or 0, top_k=extras.top_logprobs)
    return SimReply(
        text=text,
        finish_reason="length" if cut and not stopped else "stop",
        prompt_tokens=out.prompt_tokens,
        completion_tokens=word_count(text),
        logprobs=logprobs,
    )


def truncate_words(text: str, limit: int) -> tuple[str, bool]:
    """Keep the first ``limit`` words of ``text`` (the simulator's ``max_tokens``)."""
    if limit <= 0:
        return "", True
    matches = list(re.finditer(r"\S+", text))
    if len(matches) <= limit:
        return text, False
    return text[: matches[limit - 1].end()], True
