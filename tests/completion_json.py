"""The body of an OpenAI chat completion with one choice, for the test servers that fake one."""

from __future__ import annotations

import time
from typing import Any


def completion_json(
    content: str | None,
    *,
    model: str,
    completion_id: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> dict[str, Any]:
    """One ``chat.completion`` answering ``content`` (``None``: a null message content).

    Args:
        content: The assistant's text.
        model: The ``model`` field.
        completion_id: The ``id`` field.
        prompt_tokens: Usage reported for the prompt.
        completion_tokens: Usage reported for the answer.
    """
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
