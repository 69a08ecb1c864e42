"""Stable seeds: derived from SHA-256, never from Python's salted ``hash()``."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm.types import ChatRequest

_SEED_MODULUS = 2**31 - 1  # vLLM and OpenAI accept any int; 31 bits fit every backend


def stable_int(*parts: object) -> int:
    """Return a 64-bit integer that depends only on ``parts`` (stable across runs).

    Args:
        *parts: Values whose ``str`` form is hashed, separated by a unit separator.
    """
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def derive_seed(seed: int | None, sample_index: int, attempt: int | None = None) -> int | None:
    """Return the sampling seed of one sample of a seeded request.

    Sample 0 keeps the caller's seed (so ``seed=42`` sends 42); later samples get a seed
    hashed from ``(seed, sample_index)`` so that neighbouring seeds do not collide
    (``seed + k`` would make seed 1 / sample 1 equal seed 2 / sample 0).

    Args:
        seed: The request seed, or ``None`` for unseeded sampling.
        sample_index: Which repeated sample of the same prompt this is.
        attempt: The re-ask index of :attr:`llm.types.ChatRequest.attempt`; when set, the
            seed is also derived from it, so a re-ask is a new draw and not the same
            answer again (``None`` keeps the seeds of requests without it unchanged).

    Returns:
        The seed to send, or ``None`` when the request is unseeded.
    """
    if seed is None:
        return None
    base = seed if sample_index == 0 else stable_int("sample-seed", seed, sample_index)
    if attempt is not None:
        return stable_int("attempt-seed", base, attempt) % _SEED_MODULUS
    return base if sample_index == 0 else base % _SEED_MODULUS


def request_seed(request: ChatRequest) -> int | None:
    """Return the seed every backend sends for one request (sample and attempt applied)."""
    return derive_seed(request.sampling.seed, request.sample_index, request.attempt)
