"""Cohen's d, Welch, Benjamini-Hochberg and the compact letter display."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from driftlens_core.effects import (
    bh_adjust,
    cohens_d,
    compact_letter_display,
    separability,
    welch_t,
)


def test_cohens_d_by_hand() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([0.0, 1.0, 2.0])
    pooled = (3 * np.var(x, ddof=1) + 2 * np.var(y, ddof=1)) / 5
    assert cohens_d(x, y) == pytest.approx((2.5 - 1.0) / np.sqrt(pooled))
    assert np.isnan(cohens_d([1.0], y))
    assert np.isnan(cohens_d([1.0, 1.0], [1.0, 1.0]))


@pytest.mark.parametrize("seed", range(5))
def test_welch_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.2, 1.0, size=int(rng.integers(3, 40)))
    y = rng.normal(0.0, 2.0, size=int(rng.integers(3, 40)))
    ours = welch_t(x, y)
    ref = stats.ttest_ind(x, y, equal_var=False)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert ours.df == pytest.approx(ref.df, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_bh_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=int(rng.integers(1, 30))) ** 3
    np.testing.assert_allclose(
        bh_adjust(p), stats.false_discovery_control(p, method="bh"), rtol=1e-14
    )


def test_bh_ties_and_nan() -> None:
    p = np.array([0.01, 0.01, np.nan, 0.04, 0.5])
    got = bh_adjust(p)
    ref = stats.false_discovery_control(p[~np.isnan(p)], method="bh")
    assert np.isnan(got[2])
    np.testing.assert_allclose(got[~np.isnan(p)], ref)


def _diff(k: int, pairs: list[tuple[int, int]]) -> np.ndarray:
    d = np.zeros((k, k), dtype=bool)
    for i, j in pairs:
        d[i, j] = d[j, i] = True
    return d


def _shares(letters: tuple[str, ...], i: int, j: int) -> bool:
    return bool(set(letters[i]) & set(letters[j]))


@pytest.mark.parametrize(
    ("k", "pairs", "expected"),
    [
        (3, [], ("a", "a", "a")),
        (3, [(0, 1), (0, 2), (1, 2)], ("a", "b", "c")),
        (3, [(0, 2)], ("a", "ab", "b")),  # the classic chain: A ~ B ~ C but A != C
        (4, [(0, 2), (0, 3), (1, 3)], ("a", "ab", "bc", "c")),
    ],
)
def test_letters_constructed(
    k: int, pairs: list[tuple[int, int]], expected: tuple[str, ...]
) -> None:
    letters = compact_letter_display(_diff(k, pairs))
    assert letters == expected


@pytest.mark.parametrize("seed", range(20))
def test_letters_represent_every_decision(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 8))
    d = rng.uniform(size=(k, k)) < 0.4
    d = np.triu(d, 1)
    d = d | d.T
    letters = compact_letter_display(d)
    for i in range(k):
        assert letters[i]
        for j in range(i + 1, k):
            assert _shares(letters, i, j) == (not d[i, j])


def test_separability_orders_letters_by_mean() -> None:
    rng = np.random.default_rng(0)
    groups = [rng.normal(m, 0.1, 40) for m in (0.0, 0.0, 1.0, 2.0)]
    sep = separability(groups, ["low", "low2", "mid", "high"])
    assert sep.letters[3] == "a"  # highest mean gets "a"
    assert sep.letters[0] == sep.letters[1]
    assert len({sep.letters[0], sep.letters[2], sep.letters[3]}) == 3
    ref = stats.ttest_ind(groups[0], groups[2], equal_var=False).pvalue
    assert sep.p_values[0, 2] == pytest.approx(ref, rel=1e-10)


def test_separability_skips_untestable_groups() -> None:
    sep = separability([np.array([1.0]), np.array([0.0, 0.1, 0.2])], ["one", "many"])
    assert sep.letters == ("", "a")
