"""The OpenAI chat-completion body every simulator answers with (the wire format only)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from llm.types import TokenLogprob


def logprobs_json(logprobs: Sequence[TokenLogprob] | None) -> dict[str, Any] | None:
    """``{"content": [{token, logprob, bytes, top_logprobs: [...]}]}``, or ``None``."""
    if logprobs is None:
        return None
    return {
        "content": [
            {
                "token": t.token,
                "logprob": t.logprob,
                "bytes": list(t.token.encode("utf-8")),
                "top_logprobs": [
                    {"token": tok, "logprob": lp, "bytes": list(tok.encode("utf-8"))}
                    for tok, lp in t.top
                ],
            }
            for t in logprobs
        ]
    }


def choice_json(
    index: int,
    text: str,
    finish_reason: str | None,
    logprobs: Sequence[TokenLogprob] | None = None,
) -> dict[str, Any]:
    """One choice of a completion: the assistant's message, why it stopped, its logprobs."""
    return {
        "index": index,
        "message": {"role": "assistant", "content": text},
        "finish_reason": finish_reason,
        "logprobs": logprobs_json(logprobs),
    }


def completion_json(
    model: str,
    choices: list[dict[str, Any]],
    *,
    prompt_tokens: int,
    completion_tokens: int,
    **extra: Any,
) -> dict[str, Any]:
    """A ``chat.completion`` body with a fresh id (``extra``: e.g. ``system_fingerprint``)."""
    return {
        "id": f"chatcmpl-sim-{secrets.token_hex(8)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        **extra,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
