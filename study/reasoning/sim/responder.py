"""Reasoning drift's stepped responder: the answer to a request that names no task.

The generic simulator (:mod:`llm.sim.chat`) answers task requests with their handlers and
hands every other conversation to the one registered :class:`~llm.sim.response.StepResponder`;
this module registers reasoning drift's: the last user message is split into memory line
and question by the prompt's own inverse (:func:`study.prompts.split_user_message`) and
answered by :func:`~study.reasoning.sim.generator.simulate`. It also registers the sentence
bank, so the ontology's simulated labeler (:mod:`ontology.labelers.sim`) can read a
step's true leaf back without importing this instrument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from llm.sim.hostile import HOSTILE_TEXT
from llm.sim.presets import SimPreset
from llm.sim.registry import register_responder, register_step_bank
from llm.sim.response import Classifier, SimResponse
from study.prompts import split_user_message
from study.reasoning.sim.bank import LEAF_NAMES, STEP_SENTENCES
from study.reasoning.sim.generator import simulate
from study.reasoning.sim.presets import HOSTILE_PRESET


def prompt_parts(messages: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """Return ``(memory_line, question)`` of a conversation given as ``(role, content)`` pairs.

    The last user message carries the memory line and the question; system messages are
    instructions.
    """
    for role, content in reversed(messages):
        if role == "user":
            return split_user_message(content)
    return "", ""


@register_responder
def answer_steps(
    messages: Sequence[tuple[str, str]],
    *,
    preset: SimPreset,
    sample_index: int,
    seed: int | None,
    classify_memory: Classifier | None,
) -> SimResponse:
    """Simulate the stepped answer to a conversation (see :func:`simulate`)."""
    memory, question = prompt_parts(messages)
    response = simulate(
        question,
        memory,
        preset=preset,
        sample_index=sample_index,
        seed=seed,
        classify_memory=classify_memory,
    )
    return hostile(response) if preset.name == HOSTILE_PRESET else response


def hostile(response: SimResponse) -> SimResponse:
    """The response with :data:`HOSTILE_TEXT` as one more step and as the answer.

    The bank steps stay as they were (their leaves still label and drift as the dose
    says); the added step is no bank sentence, so it has no true leaf.
    """
    n = len(response.leaves) + 1
    head, sep, _ = response.text.rpartition("</think>")
    if not sep:  # a malformed answer: the preset draws none, but keep what there is
        return response
    text = f"{head}<step_{n}>{HOSTILE_TEXT}</step_{n}></think><answer>{HOSTILE_TEXT}</answer>"
    return replace(response, text=text)


register_step_bank(LEAF_NAMES, STEP_SENTENCES)
