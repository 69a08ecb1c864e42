"""Stable seeds: derived from SHA-256, never from Python's salted ``hash()``."""

from __future__ import annotations

import hashlib

_SEED_MODULUS = 2**31 - 1  # vLLM and OpenAI accept any int; 31 bits fit every backend


def stable_int(*parts: object) -> int:
    """Return a 64-bit integer that depends only on ``parts`` (stable across runs).

    Args:
        *parts: Values whose ``str`` form is hashed, separated by a unit separator.
    """
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def derive_seed(seed: int | None, sample_index: int) -> int | None:
    """Return the sampling seed of one sample of a seeded request.

    Sample 0 keeps the caller's seed (so ``seed=42`` sends 42); later samples get a seed
    hashed from ``(seed, sample_index)`` so that neighbouring seeds do not collide
    (``seed + k`` would make seed 1 / sample 1 equal seed 2 / sample 0).

    Args:
        seed: The request seed, or ``None`` for unseeded sampling.
        sample_index: Which repeated sample of the same prompt this is.

    Returns:
        The seed to send, or ``None`` when the request is unseeded.
    """
    if seed is None:
        return None
    if sample_index == 0:
        return seed
    return stable_int("sample-seed", seed, sample_index) % _SEED_MODULUS
