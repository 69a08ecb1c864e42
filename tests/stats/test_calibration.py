"""Null test, MDD, equivalence bound and noise decomposition."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from driftlens_core.calibration import (
    equivalence_bound,
    minimum_detectable,
    noise_decomposition,
    null_test,
)


def test_mdd_and_equivalence() -> None:
    assert minimum_detectable(0.1) == pytest.approx(0.28)
    np.testing.assert_allclose(equivalence_bound([-0.1, 0.05], [0.3, 0.2]), [0.3, 0.2])
    np.testing.assert_allclose(equivalence_bound([-0.4], [0.1]), [0.4])


def test_null_test_by_hand() -> None:
    # 3 questions, one condition, samples 0 and 1
    q = np.array([0, 0, 1, 1, 2, 2])
    c = np.zeros(6, dtype=np.int64)
    s = np.array([0, 1, 0, 1, 0, 1])
    x = np.array([0.2, 0.1, 0.5, 0.6, 0.3, 0.0])
    res = null_test(x, q, c, s, condition_names=("a",))
    d = np.array([0.1, -0.1, 0.3])
    cond = dict(res.conditions)["a"]
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    assert cond.mean == pytest.approx(d.mean())
    assert cond.ci_low == pytest.approx(d.mean() - half)
    assert cond.ci_high == pytest.approx(d.mean() + half)
    assert cond.n_questions == 3
    assert not cond.excludes_zero
    assert res.available and res.samples == ("0", "1")


def test_null_test_per_condition_sample_pairs() -> None:
    """A baseline's repeated samples start at 1; the test uses each condition's own pair."""
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(30), 4)
    c = np.tile([0, 0, 1, 1], 30)
    s = np.tile([0, 1, 1, 2], 30)
    x = rng.normal(size=q.size)
    res = null_test(x, q, c, s, condition_names=("attr", "none"))
    assert all(v.n_questions == 30 for _, v in res.conditions)
    assert res.samples is None  # the pairs differ between conditions


def test_null_test_without_samples() -> None:
    res = null_test([0.1, 0.2], [0, 1], [0, 0], None, condition_names=("a",))
    assert not res.available and "sample" in res.reason


def test_null_test_false_positive_rate() -> None:
    rng = np.random.default_rng(1)
    n_cond, n_q = 200, 40
    q = np.tile(np.repeat(np.arange(n_q), 2), n_cond)
    c = np.repeat(np.arange(n_cond), 2 * n_q)
    s = np.tile([0, 1], n_cond * n_q)
    u = rng.normal(size=n_q)
    x = u[q] + rng.normal(size=q.size)
    res = null_test(x, q, c, s, condition_names=tuple(f"c{i}" for i in range(n_cond)))
    assert 0.01 <= res.fraction_excluding_zero <= 0.10
    assert abs(res.mean_difference) < 0.05


def test_noise_decomposition_recovers_components() -> None:
    rng = np.random.default_rng(2)
    n_q, n_c, n_s, n_l = 150, 4, 3, 2
    tau, inter, model, labeler = 0.8, 0.4, 0.5, 0.3
    q, c, s, lab = (
        a.ravel()
        for a in np.meshgrid(
            np.arange(n_q), np.arange(n_c), np.arange(n_s), np.arange(n_l), indexing="ij"
        )
    )
    u = rng.normal(0, tau, n_q)
    v = rng.normal(0, inter, (n_q, n_c))
    w = rng.normal(0, model, (n_q, n_c, n_s))
    x = 0.3 * c + u[q] + v[q, c] + w[q, c, s] + rng.normal(0, labeler, q.size)
    res = noise_decomposition(x, q, c, s, lab)
    assert res.between_question == pytest.approx(tau**2, rel=0.25)
    assert res.question_condition == pytest.approx(inter**2, rel=0.25)
    assert res.model == pytest.approx(model**2, rel=0.15)
    assert res.labeler == pytest.approx(labeler**2, rel=0.15)
    shares = res.shares()
    assert sum(v for v in shares.values() if np.isfinite(v)) == pytest.approx(1.0)
    only_q = noise_decomposition(x, q, c)
    assert np.isnan(only_q.model) and np.isnan(only_q.labeler)
    assert only_q.between_question == pytest.approx(tau**2, rel=0.25)
