"""The toy analysis: scores -> the share of yes with its Wilson interval (the core's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from driftlens_core.proportions import proportion_interval


@dataclass(frozen=True)
class CoinResult:
    """The share of yes among the readable answers."""

    yes: int
    n: int
    unreadable: int
    share: float
    ci_low: float
    ci_high: float


def analyse(scores: Sequence[int | None]) -> CoinResult:
    """Count the readable answers and estimate the share of yes."""
    readable = [s for s in scores if s is not None]
    p = proportion_interval(sum(readable), len(readable))
    return CoinResult(
        p.k, p.n, len(scores) - len(readable), float(p.share), float(p.ci_low), float(p.ci_high)
    )
