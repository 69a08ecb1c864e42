"""Paired comparison statistics against independent oracles.

statsmodels' exact McNemar and sign test, scipy's binomial distribution for the mid-p, and a
plain resampling loop that materialises every replicate's rows (the core works on
per-item sums) for the paired bootstrap of a ratio and of d_rel.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.descriptivestats import sign_test as sm_sign_test

from driftlens_core.bootstrap import expanded_tail, question_sums
from driftlens_core.paired import (
    mcnemar_exact,
    mcnemar_pairs,
    paired_drel_difference,
    paired_ratio_difference,
    ranking_letters,
    sign_test,
    tost_from_replicates,
    wilcoxon_paired,
)


@pytest.mark.parametrize(
    ("n01", "n10"), [(0, 0), (0, 1), (1, 6), (3, 3), (7, 2), (12, 30), (40, 41), (0, 25)]
)
def test_mcnemar_exact_equals_statsmodels(n01: int, n10: int) -> None:
    """The exact p equals statsmodels' ``mcnemar(exact=True)`` on the same 2x2 table."""
    table = np.array([[50, n10], [n01, 60]])
    expected = float(mcnemar(table, exact=True).pvalue)
    got = mcnemar_exact(n01, n10)
    assert got.p_exact == pytest.approx(expected, abs=1e-12)
    # mid-p: twice the probability below the observed count plus once the observed one
    n, low = n01 + n10, min(n01, n10)
    if n and n01 != n10:
        mid = 2 * stats.binom.cdf(low - 1, n, 0.5) + stats.binom.pmf(low, n, 0.5)
        assert got.p_mid == pytest.approx(mid, abs=1e-12)
        assert got.p_mid < got.p_exact
    assert 0 <= got.p_mid <= got.p_exact <= 1


def test_mcnemar_pairs_counts_discordant_pairs_only() -> None:
    a = np.array([1, 1, 0, 0, 1, 0, np.nan, 1])
    b = np.array([1, 0, 1, 1, 1, 1, 1, np.nan])
    res = mcnemar_pairs(a, b)
    assert (res.n01, res.n10) == (3, 1)
    table = np.array([[0, 3], [1, 2]])  # rows A=0/1; statsmodels reads [0,1] and [1,0]
    assert res.p_exact == pytest.approx(float(mcnemar(table, exact=True).pvalue))


def test_sign_test_equals_statsmodels() -> None:
    rng = np.random.default_rng(3)
    d = rng.integers(-2, 4, size=40).astype(float)
    ours = sign_test(d)
    _, p = sm_sign_test(d, mu0=0)
    assert ours.p_value == pytest.approx(float(p), abs=1e-12)
    assert ours.n_nonzero == int(np.count_nonzero(d))


def test_wilcoxon_drops_zeros_and_nan_like_scipy() -> None:
    rng = np.random.default_rng(4)
    d = np.round(rng.normal(0.3, 1.0, size=30), 1)
    d[:4] = 0.0
    with_nan = np.concatenate([d, [np.nan, np.nan]])
    ours = wilcoxon_paired(with_nan)
    nz = d[d != 0]
    tied = np.unique(np.abs(nz)).size < nz.size
    ref = stats.wilcoxon(nz, method="approx" if tied else "exact")
    assert ours.p_value == pytest.approx(float(ref.pvalue), abs=1e-12)
    assert ours.n_nonzero == int(np.count_nonzero(d))
    assert wilcoxon_paired(np.zeros(5)).p_value == 1.0
    # no ties, few items: the exact distribution, as scipy computes it
    small = np.array([0.5, -1.25, 2.0, 3.5, 0.75, 4.0, -0.1, 1.6])
    assert wilcoxon_paired(small).p_value == pytest.approx(
        float(stats.wilcoxon(small, method="exact").pvalue), abs=1e-12
    )
    assert wilcoxon_paired(small).method == "wilcoxon (exact)"


def _loop_ratio_diffs(
    num_a: np.ndarray,
    den_a: np.ndarray,
    num_b: np.ndarray,
    den_b: np.ndarray,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """Plain resampling loop: draw items, gather their rows, recompute both ratios."""
    q = num_a.shape[0]
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, n_boot, 64):  # the core's chunked draw, so the streams agree
        size = min(64, n_boot - start)
        idx = rng.integers(0, q, size=(size, q), dtype=np.uint16)
        for draw in idx:
            rows = [int(i) for i in draw]
            ra = sum(num_a[i] for i in rows) / sum(den_a[i] for i in rows)
            rb = sum(num_b[i] for i in rows) / sum(den_b[i] for i in rows)
            out.append(rb - ra)
    return np.array(out)


def test_paired_ratio_difference_matches_plain_loop(impl: str) -> None:
    rng = np.random.default_rng(11)
    q = 30
    den = rng.integers(2, 6, size=q).astype(float)
    p_item = rng.uniform(0.1, 0.9, size=q)
    num_a = rng.binomial(den.astype(int), p_item).astype(float)
    num_b = rng.binomial(den.astype(int), np.clip(p_item + 0.1, 0, 1)).astype(float)
    res = paired_ratio_difference(num_a, den, num_b, den, n_boot=400, seed=5)
    diffs = _loop_ratio_diffs(num_a, den, num_b, den, 400, 5)
    tail = float(expanded_tail(0.05, q))
    lo, hi = np.quantile(diffs, [tail, 1 - tail])
    assert res.ci_low[0] == pytest.approx(lo, abs=1e-12)
    assert res.ci_high[0] == pytest.approx(hi, abs=1e-12)
    assert res.se[0] == pytest.approx(diffs.std(ddof=1), abs=1e-12)
    assert res.diff[0] == pytest.approx(num_b.sum() / den.sum() - num_a.sum() / den.sum())
    assert res.n_clusters[0] == q


def test_paired_ratio_difference_uses_shared_items_only() -> None:
    """An item one run lacks informs neither run's value."""
    num_a = np.array([1.0, 2.0, 3.0, 9.0])
    den_a = np.array([2.0, 2.0, 4.0, 9.0])
    num_b = np.array([2.0, 1.0, 4.0, 0.0])
    den_b = np.array([2.0, 2.0, 4.0, 0.0])  # item 3 missing from B
    res = paired_ratio_difference(num_a, den_a, num_b, den_b, n_boot=200, seed=0)
    assert res.value_a[0] == pytest.approx(6.0 / 8.0)
    assert res.value_b[0] == pytest.approx(7.0 / 8.0)
    assert res.n_clusters[0] == 3


def test_paired_beats_unpaired_on_correlated_items() -> None:
    """Item difficulty cancels: the paired interval is far narrower than an unpaired SE."""
    rng = np.random.default_rng(2)
    q = 60
    level = rng.normal(0, 2.0, size=q)
    a = level + rng.normal(0, 0.3, size=q)
    b = level + 0.2 + rng.normal(0, 0.3, size=q)
    one = np.ones(q)
    res = paired_ratio_difference(a, one, b, one, n_boot=1000, seed=1)
    unpaired_se = np.sqrt(a.var(ddof=1) / q + b.var(ddof=1) / q)
    assert res.se[0] < unpaired_se / 3
    assert res.p_value[0] < 0.05
    assert stats.ttest_ind(b, a, equal_var=False).pvalue > 0.05


def test_tost_agrees_with_the_ninety_percent_interval() -> None:
    rng = np.random.default_rng(8)
    q = 200
    one = np.ones(q)
    a = rng.normal(0, 1, size=q)
    b = a + rng.normal(0.0, 0.2, size=q)
    res = paired_ratio_difference(a, one, b, one, n_boot=2000, seed=3, margin=[0.1])
    inside = res.ci90_low[0] > -0.1 and res.ci90_high[0] < 0.1
    assert bool(res.equivalent()[0]) == inside
    assert inside  # SE ≈ 0.014: a ±0.1 margin is met
    narrow = paired_ratio_difference(a, one, b, one, n_boot=2000, seed=3, margin=[0.005])
    assert not narrow.equivalent()[0]
    # a shifted estimate just outside the margin: the TOST p is above one half
    rows = rng.normal(0.3, 0.05, size=(1, 2000))
    assert tost_from_replicates(rows, np.array([0.3]), 0.2, None)[0] > 0.5


def test_mdd_uses_the_tests_critical_values() -> None:
    rng = np.random.default_rng(9)
    q = 12
    one = np.ones(q)
    a = rng.normal(size=q)
    b = a + rng.normal(size=q)
    res = paired_ratio_difference(a, one, b, one, n_boot=500, seed=0)
    factor = np.sqrt(q / (q - 1)) * (stats.t.ppf(0.975, q - 1) + stats.t.ppf(0.8, q - 1))
    assert res.mdd[0] == pytest.approx(factor * res.se[0])


def _drel_rows_loop(
    q: np.ndarray, c: np.ndarray, x: np.ndarray, noise: np.ndarray, draw: np.ndarray
) -> np.ndarray:
    """d_rel per condition of the materialised rows of the drawn questions."""
    idx = np.concatenate([np.flatnonzero(q == i) for i in draw])
    cc, xx = c[idx], x[idx]
    nrows = xx[noise[cc]]
    mu, sd = nrows.mean(), nrows.std(ddof=1)
    return np.array([(xx[cc == k].mean() - mu) / sd for k in range(noise.size)])


def test_paired_drel_difference_matches_plain_loop(impl: str) -> None:
    rng = np.random.default_rng(21)
    n_q, n_c = 20, 3
    noise = np.array([True, True, False])
    q = np.repeat(np.arange(n_q), n_c * 2)
    c = np.tile(np.repeat(np.arange(n_c), 2), n_q)
    base = rng.normal(0, 0.5, size=n_q)[q]
    xa = base + rng.normal(0, 1, size=q.size) + 0.8 * (c == 2)
    xb = base + rng.normal(0, 1, size=q.size) + 1.5 * (c == 2)
    qa = question_sums(q, c, xa, noise)
    qb = question_sums(q, c, xb, noise)
    res = paired_drel_difference(qa, qb, n_boot=300, seed=4)
    draws: list[np.ndarray] = []
    gen = np.random.default_rng(4)
    for start in range(0, 300, 64):
        draws.extend(gen.integers(0, n_q, size=(min(64, 300 - start), n_q), dtype=np.uint16))
    reps = np.array(
        [_drel_rows_loop(q, c, xb, noise, d) - _drel_rows_loop(q, c, xa, noise, d) for d in draws]
    )
    tail = float(expanded_tail(0.05, n_q))
    lo, hi = np.quantile(reps[:, 2], [tail, 1 - tail])
    assert res.ci_low[2] == pytest.approx(lo, abs=1e-9)
    assert res.ci_high[2] == pytest.approx(hi, abs=1e-9)
    point = _drel_rows_loop(q, c, xb, noise, np.arange(n_q)) - _drel_rows_loop(
        q, c, xa, noise, np.arange(n_q)
    )
    np.testing.assert_allclose(res.diff, point, atol=1e-9)
    assert res.n_clusters.tolist() == [n_q] * n_c


def test_ranking_letters_show_ties() -> None:
    """Runs that cannot be separated share a letter; a separated run gets its own."""
    values = np.array([0.50, 0.52, 0.80])
    p = np.array([[np.nan, 0.6, 0.001], [0.6, np.nan, 0.002], [0.001, 0.002, np.nan]])
    r = ranking_letters(values, p)
    assert r.order == (2, 1, 0)
    assert r.letters[0] == r.letters[1] != r.letters[2]
    assert r.letters[2] == "a"
    tied = ranking_letters(values, np.full((3, 3), 0.5))
    assert tied.letters == ("a", "a", "a")


def test_wald_difference_is_a_t_interval_with_its_tost() -> None:
    from driftlens_core.paired import wald_difference

    res = wald_difference([0.2, 1.0], [0.5, 1.0], [0.1, 0.2], 25, margin=[0.4, 0.5])
    t = stats.t.ppf(0.975, 24)
    assert res.ci_low[0] == pytest.approx(0.3 - t * 0.1)
    assert res.p_value[0] == pytest.approx(2 * stats.t.sf(3.0, 24))
    assert res.mdd[1] == pytest.approx((t + stats.t.ppf(0.8, 24)) * 0.2)
    # TOST: the larger one-sided p at ±margin
    assert res.tost_p[0] == pytest.approx(max(stats.t.sf(0.7 / 0.1, 24), stats.t.sf(0.1 / 0.1, 24)))
    assert res.equivalent().tolist() == [False, True]
    assert np.isnan(wald_difference([0.0], [1.0], [0.0], 25).p_value[0])
