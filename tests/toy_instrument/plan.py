"""The toy plan: items x samples -> chat requests with resumable keys, answered in a batch."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass

from llm.sim.tasks import task_marker
from llm.types import ChatBackend, ChatMessage, ChatRequest, SamplingParams
from tests.toy_instrument.items import CoinItem
from tests.toy_instrument.sim import TASK


@dataclass(frozen=True)
class Answer:
    """One answered request: its plan key and the reply text."""

    key: tuple[str, int]
    text: str


def plan(items: Sequence[CoinItem], samples: int) -> list[ChatRequest]:
    """One request per item x sample; the case rides on the last user line as JSON."""
    system = f"{task_marker(TASK)}\nAnswer yes or no."
    return [
        ChatRequest(
            messages=(
                ChatMessage("system", system),
                ChatMessage("user", f"{it.question}\n{json.dumps({'id': it.id})}"),
            ),
            sampling=SamplingParams(temperature=1.0, seed=0),
            sample_index=s,
            tag=(it.id, s),
        )
        for it in items
        for s in range(samples)
    ]


def run(backend: ChatBackend, requests: Sequence[ChatRequest]) -> list[Answer]:
    """Answer the plan (in order) through any backend."""
    results = asyncio.run(backend.achat(list(requests), concurrency=4))
    return [Answer(req.tag, res.text or "") for req, res in zip(requests, results, strict=True)]
