"""Instance-clustered statistics of rubric scores and the Wilson interval."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from driftlens_core.proportions import proportion_interval
from driftlens_core.rubric import cluster_correlation, cluster_mean, cluster_slope, paired_effect


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (62, 541), (1, 2)])
def test_wilson_equals_statsmodels(k: int, n: int) -> None:
    p = proportion_interval(k, n)
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (p.ci_low, p.ci_high) == pytest.approx((lo, hi), abs=1e-12)
    assert p.share == k / n


def test_wilson_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        proportion_interval(5, 3)


def test_cluster_mean_is_the_row_mean_and_its_interval_holds_it() -> None:
    rng = np.random.default_rng(1)
    inst = np.repeat(np.arange(40), 3)
    vals = rng.integers(0, 5, inst.size).astype(float)
    vals[::7] = np.nan
    cm = cluster_mean(inst, vals, n_boot=500, seed=2)
    assert cm.mean == pytest.approx(np.nanmean(vals))
    assert cm.ci_low < cm.mean < cm.ci_high
    assert cm.n == int(np.isfinite(vals).sum()) and cm.n_clusters == 40
    again = cluster_mean(inst, vals, n_boot=500, seed=2)
    assert again == cm


def test_paired_effect_finds_a_real_shift_and_not_a_null_one() -> None:
    rng = np.random.default_rng(5)
    inst = np.arange(200)
    real = paired_effect(inst, -1.0 + rng.normal(0, 1, 200), n_boot=1000, seed=1)
    assert real.ci_high < 0 and real.excludes_zero
    # the test's own critical values at 200 instances, from scipy's t directly
    n = 200
    factor = np.sqrt(n / (n - 1)) * (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.80, n - 1))
    assert real.mdd == pytest.approx(factor * real.se, rel=1e-12)
    null = paired_effect(inst, rng.normal(0, 1, 200), n_boot=1000, seed=1)
    assert not null.excludes_zero
    assert null.equivalence_bound >= max(abs(null.ci_low), abs(null.ci_high)) * 0.7


def test_slope_recovers_a_known_line() -> None:
    inst = np.repeat(np.arange(30), 7)
    x = np.tile(np.arange(7.0), 30)
    y = 13.0 - 0.1 * x + np.repeat(np.random.default_rng(0).normal(0, 1, 30), 7)
    s = cluster_slope(inst, x, y, n_boot=300, seed=0)
    assert s.mean == pytest.approx(-0.1)
    assert s.ci_low == pytest.approx(-0.1) and s.ci_high == pytest.approx(-0.1)


def test_correlation_point_estimates_equal_scipy() -> None:
    rng = np.random.default_rng(9)
    x = rng.integers(0, 21, 120).astype(float)
    y = x + rng.normal(0, 3, 120)
    c = cluster_correlation(np.arange(120) // 2, x, y, n_boot=300, seed=0)
    assert c.pearson == pytest.approx(stats.pearsonr(x, y)[0])
    assert c.spearman == pytest.approx(stats.spearmanr(x, y)[0])
    assert c.pearson_ci_low < c.pearson < c.pearson_ci_high
    assert c.spearman_ci_low < c.spearman < c.spearman_ci_high


def test_paired_effect_mdd_uses_the_tests_critical_values_at_42_instances() -> None:
    """At 42 instances the expanded-percentile test needs 2.905 SE, not the z test's 2.8."""
    rng = np.random.default_rng(9)
    inst = np.repeat(np.arange(42), 2)
    res = paired_effect(inst, rng.normal(0.3, 1, 84), n_boot=400, seed=3)
    factor = np.sqrt(42 / 41) * (stats.t.ppf(0.975, 41) + stats.t.ppf(0.80, 41))
    assert factor == pytest.approx(2.905, abs=5e-4)
    assert res.mdd == pytest.approx(factor * res.se, rel=1e-12)
