"""Cluster bootstrap of d_rel: parity, reproducibility, sufficient statistics by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from driftlens_core import use_implementation
from driftlens_core.bootstrap import (
    _counts_numpy,
    bootstrap_p_value,
    cluster_bootstrap_sums,
    drel_bootstrap,
    expanded_tail,
    percentile_interval,
    question_sums,
)


def _table(seed: int = 0, q: int = 25, c: int = 4) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 4, size=(q, c))  # unbalanced: 1-3 rows per cell
    qi = np.repeat(np.repeat(np.arange(q), c), rows.ravel())
    ci = np.repeat(np.tile(np.arange(c), q), rows.ravel())
    x = rng.normal(size=(qi.size, 2)) + 0.3 * ci[:, None] + rng.normal(size=q)[qi][:, None]
    noise = np.zeros(c, dtype=bool)
    noise[:2] = True
    return qi, ci, x, noise


def test_d_rel_point_estimate_by_hand() -> None:
    # 3 questions; condition 0 = noise, condition 1 = treatment
    q = np.array([0, 0, 1, 1, 2, 2, 0, 1, 2])
    c = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1])
    x = np.array([0.1, 0.3, 0.2, 0.2, 0.0, 0.4, 0.5, 0.6, 0.7])
    qs = question_sums(q, c, x, np.array([True, False]))
    res = drel_bootstrap(qs, n_boot=200, seed=1)
    noise = x[:6]
    expected = (x[6:].mean() - noise.mean()) / noise.std(ddof=1)
    assert res.estimate[1, 0] == pytest.approx(expected, rel=1e-12)
    assert res.estimate[0, 0] == pytest.approx(0.0, abs=1e-12)
    assert res.noise_mean[0] == pytest.approx(noise.mean())
    assert res.noise_sd[0] == pytest.approx(noise.std(ddof=1))


def test_replicate_equals_materialised_resample() -> None:
    """A replicate from sufficient statistics equals the statistic of the resampled rows."""
    qi, ci, x, noise = _table(3)
    qs = question_sums(qi, ci, x, noise)
    n_q = qs.n_questions
    sums = cluster_bootstrap_sums(qs.columns(), n_boot=3, seed=7, chunk=512)
    idx = np.random.default_rng(7).integers(0, n_q, size=(3, n_q), dtype=np.uint16)
    from driftlens_core.bootstrap import _drel_from_sums

    for b in range(3):
        rows = np.concatenate([np.flatnonzero(qi == k) for k in idx[b]])
        xr, cr = x[rows], ci[rows]
        nz = noise[cr]
        for m in range(2):
            mu_n, sd_n = xr[nz, m].mean(), xr[nz, m].std(ddof=1)
            d_expected = [(xr[cr == j, m].mean() - mu_n) / sd_n for j in range(4)]
            d, _, _, _ = _drel_from_sums(qs, sums[b])
            np.testing.assert_allclose(d[:, m], d_expected, rtol=1e-10, atol=1e-12)


def test_parity_compiled_vs_python() -> None:
    qi, ci, x, noise = _table(1, q=40)
    qs = question_sums(qi, ci, x, noise)
    with use_implementation("python"):
        a = drel_bootstrap(qs, n_boot=1500, seed=11, chunk=256)
        sa = cluster_bootstrap_sums(qs.columns(), n_boot=700, seed=5)
    with use_implementation("compiled"):
        b = drel_bootstrap(qs, n_boot=1500, seed=11, chunk=256)
        sb = cluster_bootstrap_sums(qs.columns(), n_boot=700, seed=5)
    np.testing.assert_allclose(sa, sb, rtol=1e-12, atol=1e-12)
    for field in ("estimate", "ci_low", "ci_high", "p_value", "se", "ci90_low"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    n_clusters=st.integers(1, 300),
    n_rep=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_counts_kernel_matches_bincount(n_clusters: int, n_rep: int, seed: int) -> None:
    from driftlens_core import _bootstrap

    idx = np.random.default_rng(seed).integers(
        0, n_clusters, size=(n_rep, n_clusters), dtype=np.uint16
    )
    ref = _counts_numpy(idx, n_clusters)
    got = np.full((n_rep + 2, n_clusters), np.nan)  # a larger, dirty buffer is fine
    _bootstrap.counts_u16(idx, got)
    np.testing.assert_array_equal(ref, got[:n_rep])
    np.testing.assert_array_equal(got[:n_rep].sum(axis=1), n_clusters)
    got32 = np.empty((n_rep, n_clusters))
    _bootstrap.counts_u32(idx.astype(np.uint32), got32)
    np.testing.assert_array_equal(ref, got32)


def test_reproducible_by_seed_and_generator(impl: str) -> None:
    qi, ci, x, noise = _table(2)
    qs = question_sums(qi, ci, x, noise)
    a = drel_bootstrap(qs, n_boot=800, seed=42)
    b = drel_bootstrap(qs, n_boot=800, seed=42)
    c = drel_bootstrap(qs, n_boot=800, seed=np.random.default_rng(42))
    d = drel_bootstrap(qs, n_boot=800, seed=43)
    np.testing.assert_array_equal(a.ci_low, b.ci_low)
    np.testing.assert_array_equal(a.ci_low, c.ci_low)
    assert not np.array_equal(a.ci_low[2:], d.ci_low[2:])


def test_p_value_and_interval_formulas() -> None:
    r = np.concatenate([-np.arange(1.0, 21.0), np.arange(1.0, 81.0)])
    # plain: 2 * (20 + 1) / (100 + 1)
    assert bootstrap_p_value(r)[0] == pytest.approx(42 / 101)
    # fewer than 10 replicates beyond 0: the tail is extrapolated with a normal fit
    far = np.random.default_rng(1).normal(5.0, 1.0, size=2000)
    p_far = bootstrap_p_value(far)[0]
    assert p_far < 2 / 2001
    assert p_far == pytest.approx(2 * stats.norm.sf(far.mean() / far.std(ddof=1)), rel=1e-9)
    # the expanded tail is below alpha/2 and tends to it for many clusters
    assert expanded_tail(0.05, np.array([30.0]))[0] < 0.025
    assert expanded_tail(0.05, np.array([100000.0]))[0] == pytest.approx(0.025, abs=1e-4)
    draws = np.random.default_rng(0).normal(size=(20000, 1))
    lo, hi = percentile_interval(draws, 0.95)
    assert lo[0] == pytest.approx(-1.96, abs=0.05) and hi[0] == pytest.approx(1.96, abs=0.05)
    lo30, hi30 = percentile_interval(draws, 0.95, np.array([30]))
    assert lo30[0] < lo[0] and hi30[0] > hi[0]


def test_p_value_consistent_with_interval() -> None:
    """p < 0.05 exactly when the 95% interval excludes 0 (same expansion)."""
    rng = np.random.default_rng(5)
    for shift in np.linspace(0.0, 3.0, 25):
        r = rng.normal(shift, 1.0, size=(4000, 1))
        n = np.array([25])
        lo, hi = percentile_interval(r, 0.95, n)
        p = bootstrap_p_value(r, 0.0, n)[0]
        excludes = lo[0] > 0 or hi[0] < 0
        if abs(p - 0.05) > 0.003:  # away from the interpolation boundary
            assert (p < 0.05) == excludes


def test_invalid_input() -> None:
    with pytest.raises(ValueError):
        cluster_bootstrap_sums(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="noise"):
        question_sums([0, 1], [0, 1], [0.1, 0.2], [False, False])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_q=st.integers(2, 12), n_c=st.integers(2, 4))
def test_sufficient_statistics_equal_materialised_rows(seed: int, n_q: int, n_c: int) -> None:
    """Property: any multiplicity vector gives the statistic of the materialised rows."""
    from driftlens_core.bootstrap import _drel_from_sums

    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 4, size=(n_q, n_c))
    qi = np.repeat(np.repeat(np.arange(n_q), n_c), rows.ravel())
    ci = np.repeat(np.tile(np.arange(n_c), n_q), rows.ravel())
    x = rng.normal(size=(qi.size, 1)) * 5 + 100  # a large mean stresses Σx² − Nμ²
    noise = np.zeros(n_c, dtype=bool)
    noise[0] = True
    qs = question_sums(qi, ci, x, noise)
    w = rng.multinomial(n_q, np.full(n_q, 1.0 / n_q))
    d, _, mu, sd = _drel_from_sums(qs, w @ qs.columns())
    take = np.concatenate([np.repeat(np.flatnonzero(qi == k), w[k]) for k in range(n_q)])
    xr, cr = x[take, 0], ci[take]
    nz = xr[cr == 0]
    # Identical noise values (one row drawn several times) have no spread; their float
    # std() can come out as 1e-14 instead of 0, which no statistic is defined on.
    if nz.size < 2 or np.ptp(nz) == 0:
        return
    assert mu[0] + qs.shift[0] == pytest.approx(nz.mean(), rel=1e-12)
    assert sd[0] == pytest.approx(nz.std(ddof=1), rel=1e-9)
    for j in range(n_c):
        if (cr == j).any():
            expected = (xr[cr == j].mean() - nz.mean()) / nz.std(ddof=1)
            assert d[j, 0] == pytest.approx(expected, rel=1e-8, abs=1e-10)
