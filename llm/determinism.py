"""Does an endpoint honour ``seed`` and ``temperature``? Two identical requests tell.

A judge or an instrument asks seeded, usually greedy, requests so a rerun gives the same
verdicts. Some endpoints ignore ``seed`` (or ``temperature``): their answers then change
between identical requests and every cached verdict is one draw among many. The check
sends one request twice, past the cache, and compares the replies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llm.batch import run_chat_batch
from llm.specs import ModelSpec
from llm.types import ChatBackend, ChatRequest


@dataclass(frozen=True)
class RepeatCheck:
    """The outcome of sending one seeded request twice.

    Attributes:
        spec: The endpoint's model spec.
        agreed: Whether both replies were identical (``None``: a request failed).
        temperature: The request's temperature.
        seed: The request's seed.
    """

    spec: str
    agreed: bool | None
    temperature: float | None
    seed: int | None

    @property
    def warning(self) -> str | None:
        """One sentence naming an endpoint that ignored the settings, else ``None``."""
        if self.agreed is not False:
            return None
        return (
            f"{self.spec} ignores seed or temperature: two identical requests (seed "
            f"{self.seed}, temperature {self.temperature}) gave different replies, so its "
            "answers are not reproducible."
        )


def check_repeat(backend: ChatBackend | ModelSpec, request: ChatRequest) -> RepeatCheck:
    """Send ``request`` twice without the cache and compare the replies.

    Args:
        backend: The backend or its parsed spec.
        request: A seeded request (its ``attempt`` is cleared so it is an ordinary one).
    """
    req = replace(request, attempt=None)
    # two batches: identical requests in one batch are sent once
    first = run_chat_batch(backend, [req], session=None, concurrency=1)[0]
    second = run_chat_batch(backend, [req], session=None, concurrency=1)[0]
    spec = str(backend) if isinstance(backend, ModelSpec) else backend.spec
    agreed = (
        None if first.error is not None or second.error is not None else first.text == second.text
    )
    return RepeatCheck(spec, agreed, req.sampling.temperature, req.sampling.seed)
