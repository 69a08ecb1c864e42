"""Simulated LLM and embedder for a real memory system (Mem0) run against the simulator.

Mem0 (``mem0ai``) needs an LLM that extracts memories from conversation turns and an
embedding model; both are reached through the OpenAI API, so the simulator serves them:

* :func:`mem0_extraction_answerer` answers Mem0's additive extraction prompt (its system
  message opens with the "Memory Extractor" role) with one memory per *user* line of the
  "New Messages" section, copied verbatim — a perfectly literal extractor. The memory
  system's own machinery (embedding, de-duplication, its ADD-only resolution rule, the
  vector store) is real; only the language model is simulated.
* :func:`hashed_embedding` gives each text a deterministic bag-of-words vector (served at
  ``/v1/embeddings``), so retrieval works offline without any model weights.
"""

from __future__ import annotations

import hashlib
import json
import math
import re

from llm.sim.tasks import Answerer, Messages

#: The phrase that identifies Mem0's additive extraction system prompt.
MEM0_EXTRACTOR_SIGNATURE = "You are a Memory Extractor"
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


def new_user_lines(prompt: str) -> list[str]:
    """The user lines of the "## New Messages" section of a Mem0 extraction prompt."""
    _, sep, rest = prompt.partition("## New Messages\n")
    if not sep:
        return []
    section = rest.split("\n## ", 1)[0]
    return [
        ln.removeprefix("user: ").strip() for ln in section.splitlines() if ln.startswith("user: ")
    ]


def mem0_extraction_answerer() -> Answerer:
    """An answerer for Mem0's extraction prompt (``None`` for every other request)."""

    def answer(messages: Messages, seed: int | None, sample_index: int) -> str | None:
        system = next((c for r, c in messages if r == "system"), "")
        if MEM0_EXTRACTOR_SIGNATURE not in system:
            return None
        user = next((c for r, c in messages if r == "user"), "")
        memories = [{"text": line} for line in new_user_lines(user) if line]
        return json.dumps({"memory": memories})

    return answer
