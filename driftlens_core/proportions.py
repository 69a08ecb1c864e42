"""Intervals for a share ``k / n`` (flag rates, observability shares).

The Wilson score interval keeps its coverage near the nominal level for small ``n`` and
shares near 0 or 1, where the Wald interval ``p ± z·sqrt(p(1−p)/n)`` collapses to a point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True)
class Proportion:
    """A share with its interval (NaN share and bounds when ``n = 0``)."""

    k: int
    n: int
    share: float
    ci_low: float
    ci_high: float


def proportion_interval(k: int, n: int, *, level: float = 0.95) -> Proportion:
    """Wilson score interval of ``k`` successes in ``n`` trials.

    Args:
        k: Successes, ``0 ≤ k ≤ n``.
        n: Trials.
        level: Confidence level.

    Raises:
        ValueError: ``k`` outside ``[0, n]`` or ``n < 0``.
    """
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        nan = float("nan")
        return Proportion(k, n, nan, nan, nan)
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4 * n * n)) / denom
    # at k = 0 or k = n the exact bound is 0 or 1; rounding must not push it past
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Proportion(k, n, p, low, high)
