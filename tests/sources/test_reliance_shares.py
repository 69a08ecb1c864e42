"""Self%, U%, D% and U%/D% where an odds ratio is infinite or zero: NaN, never a warning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from driftlens_core.source_reliance import reliance_shares, source_influence


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("ors", "shares_nan", "ratio_nan"),
    [
        ((math.inf, 2.0, 3.0), True, False),  # a separated fit: e^βP overflowed
        ((1.0, math.inf, 3.0), True, True),
        ((1.0, 2.0, 0.0), False, True),  # e^(δD+βD) underflowed to 0
        ((0.0, 0.0, 0.0), True, True),
    ],
)
def test_shares_of_an_infinite_or_zero_odds_ratio_are_nan_without_a_warning(
    ors: tuple[float, float, float], shares_nan: bool, ratio_nan: bool
) -> None:
    s, u, d, ud = reliance_shares(*ors)
    assert all(bool(np.isnan(x)) == shares_nan for x in (s, u, d))
    assert bool(np.isnan(ud)) == ratio_nan


@pytest.mark.filterwarnings("error")
def test_finite_odds_ratios_keep_their_shares_element_by_element() -> None:
    s, u, d, ud = reliance_shares([1.0, math.inf], [2.0, 1.0], [1.0, 1.0])
    np.testing.assert_allclose(s, [25.0, np.nan])
    np.testing.assert_allclose(u, [50.0, np.nan])
    np.testing.assert_allclose(d, [25.0, np.nan])
    np.testing.assert_allclose(ud, [2.0, 1.0])


@pytest.mark.filterwarnings("error")
def test_a_separated_influence_fit_runs_with_warnings_as_errors() -> None:
    rng = np.random.default_rng(0)
    n = 40
    q = np.repeat(np.arange(n), 4)
    par = (np.arange(4 * n) % 3 == 0).astype(float)
    up = np.tile([0, 1, 0, 1], n).astype(float)
    uc = np.tile([0, 1, 0, 0], n).astype(float)
    dp = np.tile([0, 0, 1, 1], n).astype(float)
    dc = (rng.random(4 * n) < 0.5) * dp
    # a correct document is never followed: no finite maximum for its coefficient
    y = np.where(dc == 1, 0.0, (rng.random(4 * n) < 0.6).astype(float))
    res = source_influence(y, par, up, uc, dp, dc, clusters=q)
    assert res.fit.separation
    assert res.or_doc < 1e-6
    assert math.isfinite(res.self_pct)
