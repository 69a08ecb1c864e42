"""What a verdict is stored with: the judge's model, prompt and how it was asked.

Every judge and LLM labeler stores these settings with each verdict (issue 22), so a
report can print them and refuse to pool verdicts given under different ones
(study/judge_settings.py). Generic: built from the request itself, whatever the caller.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from llm.types import ChatMessage, SamplingParams

__all__ = ["request_settings"]


def request_settings(
    model: str,
    messages: Sequence[ChatMessage],
    sampling: SamplingParams,
    *,
    prompt_version: str,
) -> dict[str, Any]:
    """The settings of a judging request, JSON-ready.

    The prompt hash covers the system message (the rubric or instructions), not the case,
    so the verdicts of one judging pass share it.

    Args:
        model: The judge's spec (or the labeler's spec string).
        messages: One request's conversation (its system message is hashed).
        sampling: The request's sampling.
        prompt_version: The prompt's version name.

    Returns:
        ``model``, ``prompt_version``, ``prompt_hash`` (16 hex digits), ``temperature``,
        ``top_p``, ``max_tokens`` and ``seed``.
    """
    system = next((m.content for m in messages if m.role == "system"), "")
    return {
        "model": model,
        "prompt_version": prompt_version,
        "prompt_hash": hashlib.sha256(system.encode("utf-8")).hexdigest()[:16],
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "seed": sampling.seed,
    }
