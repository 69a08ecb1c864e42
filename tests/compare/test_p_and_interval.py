"""Issue 37 item 9: how a row's p-value and its 95 % interval may differ, as docs/compare.md says.

The add-one tail count makes the p-value at most slightly larger than the interval's level
at the boundary: an interval that just excludes 0 may have p just above 0.05, never the
reverse (p < 0.05 with an interval that includes 0).
"""

from __future__ import annotations

import numpy as np

from driftlens_core.paired import paired_ratio_difference


def test_a_significant_p_always_comes_with_an_interval_that_excludes_zero() -> None:
    reverse = []
    for s in range(80):
        rng = np.random.default_rng(s)
        n = int(rng.integers(15, 60))
        a = (rng.random((n, 6)) < 0.5).sum(1).astype(float)
        b = np.clip(a + np.round(rng.normal(rng.normal(0, 0.8), 1.5, n)), 0, 6)
        den = np.full(n, 6.0)
        r = paired_ratio_difference(a, den, b, den, n_boot=2000, seed=s, alpha=0.05, margin=None)
        lo, hi, p = r.ci_low[0], r.ci_high[0], r.p_value[0]
        if p < 0.05 and lo <= 0.0 <= hi:
            reverse.append((s, lo, hi, p))
    assert reverse == []
