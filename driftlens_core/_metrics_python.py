"""Pure-Python twins of the compiled drift kernels of :mod:`driftlens_core._metrics`.

The reference implementation: textbook recurrences on plain lists of non-empty
sequences, run when :mod:`driftlens_core._impl` chooses ``python`` and checked against
the compiled kernels by tests/core/test_metrics_parity.py. Input is already validated
by :mod:`driftlens_core.metrics`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence


def _py_dtw(a: Sequence[int], b: Sequence[int], cost: Callable[[int, int], float]) -> float:
    """DTW_raw / max(n, m) by the textbook recurrence on non-empty sequences.

    D[i][j] = c(a_i, b_j) + min(D[i-1][j-1], D[i-1][j], D[i][j-1]), D[-1][-1] = 0 and
    D[-1][j] = D[i][-1] = ∞ otherwise; one row is kept.
    """
    inf = math.inf
    n, m = len(a), len(b)
    prev = [inf] * (m + 1)
    prev[0] = 0.0
    for i in range(n):
        cur = [inf] * (m + 1)
        ai = a[i]
        for j in range(m):
            cur[j + 1] = cost(ai, b[j]) + min(prev[j], prev[j + 1], cur[j])
        prev = cur
    return prev[m] / max(n, m)


def _py_dtw01(a: Sequence[int], b: Sequence[int]) -> float:
    """:func:`_py_dtw` under the 0/1 cost, written inline (no function call per cell)."""
    inf = math.inf
    n, m = len(a), len(b)
    prev = [inf] * (m + 1)
    prev[0] = 0.0
    for ai in a:
        cur = [inf] * (m + 1)
        left = inf
        for j, bj in enumerate(b):
            left = (ai != bj) + min(prev[j], prev[j + 1], left)
            cur[j + 1] = left
        prev = cur
    return prev[m] / max(n, m)


def _py_levenshtein(a: Sequence[int], b: Sequence[int]) -> int:
    """Edit distance by the Wagner–Fischer recurrence."""
    prev = list(range(len(b) + 1))
    for i, ai in enumerate(a):
        cur = [i + 1]
        for j, bj in enumerate(b):
            cur.append(min(prev[j + 1] + 1, cur[j] + 1, prev[j] + (ai != bj)))
        prev = cur
    return prev[-1]


def _py_js(a: Sequence[int], b: Sequence[int]) -> float:
    """Jensen–Shannon distance of the histograms of two non-empty sequences, from the definition."""
    hs, ht = Counter(a), Counter(b)
    n, m = len(a), len(b)
    kl_s = kl_t = 0.0
    for sym in hs.keys() | ht.keys():
        p, q = hs[sym] / n, ht[sym] / m
        mid = (p + q) / 2
        if p > 0:
            kl_s += p * math.log(p / mid)
        if q > 0:
            kl_t += q * math.log(q / mid)
    js = 0.5 * kl_s + 0.5 * kl_t
    return math.sqrt(max(js, 0.0) / math.log(2))


def _py_pair(a: Sequence[int], b: Sequence[int], alpha: float) -> tuple[float, float, float, float]:
    if not a or not b:
        v = 0.0 if not a and not b else 1.0
        return v, v, v, v
    mx = max(len(a), len(b))
    d_dtw = _py_dtw01(a, b)
    d_lev = _py_levenshtein(a, b) / mx
    d_js = _py_js(a, b)
    return d_dtw, d_lev, d_js, alpha * d_lev + (1 - alpha) * d_js
