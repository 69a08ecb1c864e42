"""The toy score: a reply reads as yes (1), no (0) or unreadable (None)."""

from __future__ import annotations


def score(text: str) -> int | None:
    """1 for a yes, 0 for a no, ``None`` for anything else."""
    word = text.strip().lower().rstrip(".!")
    return {"yes": 1, "no": 0}.get(word)
