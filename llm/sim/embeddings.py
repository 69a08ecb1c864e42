"""Deterministic embeddings for the served simulator's ``/v1/embeddings``.

:func:`hashed_embedding` gives each text a bag-of-words vector, so a memory system's
vector store (e.g. Mem0's, :mod:`study.conflicts.sim.mem0`) retrieves offline without
any model weights.
"""

from __future__ import annotations

import hashlib
import math
import re

DEFAULT_EMBEDDING_DIMS = 256
_WORD_RE = re.compile(r"[a-z0-9']+")


def hashed_embedding(text: str, dims: int = DEFAULT_EMBEDDING_DIMS) -> list[float]:
    """A unit-length bag-of-words vector: each word adds ±1 at a hashed position."""
    vec = [0.0] * dims
    for word in _WORD_RE.findall(text.lower()):
        h = hashlib.blake2b(word.encode(), digest_size=8).digest()
        idx = int.from_bytes(h[:4], "little") % dims
        vec[idx] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:
        vec[0] = 1.0
        return vec
    return [v / norm for v in vec]
