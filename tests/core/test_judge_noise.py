"""The two-stage (items, judge) bootstrap and the flip rate against plain loops."""

from __future__ import annotations

import numpy as np
import pytest

from driftlens_core.judge_noise import flip_rate, two_stage_bootstrap


def _loop_two_stage(
    v: list[list[float]], n_boot: int, seed: int
) -> tuple[list[float], list[float], float]:
    """One replicate at a time, one item at a time, from the same draws."""
    rng = np.random.default_rng(seed)
    n, k = len(v), len(v[0])
    items = rng.integers(0, n, size=(n_boot, n))
    t = rng.standard_t(k - 1, size=n_boot)
    m = [sum(v[i][j] for i in range(n)) / n for j in range(k)]
    grand = sum(m) / k
    between = sum((x - grand) ** 2 for x in m) / (k - 1)
    within = 0.0
    for i in range(n):
        row_mean = sum(v[i]) / k
        within += sum((x - row_mean) ** 2 for x in v[i]) / (k - 1)
    within /= n
    tau2 = max(0.0, between - within / n)
    free, both = [], []
    for b in range(n_boot):
        s_free = 0.0
        for j in range(n):
            s_free += v[items[b][j]][0]
        free.append(s_free / n)
        both.append(s_free / n + tau2**0.5 * t[b])
    return free, both, tau2


def test_two_stage_matches_the_plain_loop() -> None:
    rng = np.random.default_rng(3)
    truth = rng.normal(10, 2, size=40)
    # every judgement shares a leniency of its own, on top of per-item noise
    v = truth[:, None] + rng.normal(0, 1.0, size=(40, 5)) + rng.normal(0, 1.0, size=5)
    got = two_stage_bootstrap(v, n_boot=500, seed=11)
    free, both, tau2 = _loop_two_stage(v.tolist(), 500, 11)
    assert got.judge_free == pytest.approx(tuple(np.percentile(free, [2.5, 97.5])), abs=1e-12)
    assert got.judge_inclusive == pytest.approx(tuple(np.percentile(both, [2.5, 97.5])), abs=1e-12)
    share = tau2 / (np.var(free, ddof=1) + tau2)
    assert got.judge_share == pytest.approx(share, abs=1e-12)
    assert got.mean == pytest.approx(float(v[:, 0].mean()))
    # judge noise widens the interval
    w_free = got.judge_free[1] - got.judge_free[0]
    assert got.judge_inclusive[1] - got.judge_inclusive[0] > w_free


def test_a_judge_without_shared_shift_adds_nothing() -> None:
    v = np.repeat(np.arange(30, dtype=float)[:, None], 4, axis=1)
    got = two_stage_bootstrap(v, n_boot=300, seed=0)
    assert got.judge_free == got.judge_inclusive and got.judge_share == 0.0
    # per-verdict noise only, and column means that happen to agree: nothing shared
    v = np.arange(30, dtype=float)[:, None] + np.tile([[1.0, -1.0], [-1.0, 1.0]], (15, 1))
    got = two_stage_bootstrap(v, n_boot=300, seed=0)
    assert got.judge_free == got.judge_inclusive


def test_flip_rate_counts_disagreeing_pairs_and_skips_missing() -> None:
    ref = np.array([1.0, 2.0, np.nan, 4.0])
    other = np.array([[1.0, 3.0], [2.0, 2.0], [1.0, 1.0], [np.nan, 0.0]])
    pairs = [(1.0, 1.0), (1.0, 3.0), (2.0, 2.0), (2.0, 2.0), (4.0, 0.0)]
    assert flip_rate(ref, other) == pytest.approx(sum(a != b for a, b in pairs) / len(pairs))
    assert np.isnan(flip_rate(np.array([np.nan]), np.array([1.0])))


@pytest.mark.parametrize("bad", [np.zeros((0, 2)), np.zeros(3), np.array([[np.nan]])])
def test_bad_verdicts_raise(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        two_stage_bootstrap(bad)
