"""Ordinal agreement: scikit-learn and the krippendorff package are the oracles."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from driftlens_core.ordinal import (
    exact_agreement,
    krippendorff_alpha_ordinal,
    mean_absolute_difference,
    ordinal_agreement,
    weighted_kappa,
    within_k_agreement,
)


@pytest.mark.parametrize("weights", ["quadratic", "linear"])
def test_weighted_kappa_equals_sklearn_on_random_pairs(weights: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(5, 60))
        a = rng.integers(0, 5, n)
        # correlated second rater with occasional large misses
        b = np.clip(a + rng.choice([-2, -1, 0, 0, 0, 1, 3], n), 0, 4)
        if len(set(a) | set(b)) < 2:
            continue
        ours = weighted_kappa(a, b, weights)  # type: ignore[arg-type]
        ref = cohen_kappa_score(a, b, weights=weights, labels=[0, 1, 2, 3, 4])
        assert ours == pytest.approx(ref, abs=1e-12)


def test_weights_follow_the_scale_when_levels_are_missing() -> None:
    """Scores on {0, 1, 4} only: 1 -> 4 is three steps of the 0-4 scale, not one."""
    a = [0, 1, 4, 1, 0, 4, 1, 0]
    b = [1, 4, 4, 1, 0, 1, 0, 0]
    ref = cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2, 3, 4])
    assert weighted_kappa(a, b, "quadratic") == pytest.approx(ref, abs=1e-12)
    assert ordinal_agreement(a, b).qwk == pytest.approx(ref, abs=1e-12)
    # the three-level reading (sklearn without labels=) is a different number
    assert abs(ref - cohen_kappa_score(a, b, weights="quadratic")) > 0.01


def test_hand_counted_fixture() -> None:
    a = [0, 1, 2, 3, 4, 4, 2, 1, 0, 3]
    b = [0, 2, 2, 1, 4, 3, 2, 1, 2, 3]
    # diffs: 0 1 0 2 0 1 0 0 2 0 -> exact 6/10, within one 8/10, MAE 6/10
    assert exact_agreement(a, b) == pytest.approx(0.6)
    assert within_k_agreement(a, b, 1) == pytest.approx(0.8)
    assert mean_absolute_difference(a, b) == pytest.approx(0.6)
    res = ordinal_agreement(a, b)
    assert (res.n, res.exact, res.within_one, res.mae) == (10, 0.6, 0.8, 0.6)


def test_missing_scores_are_left_out_pairwise() -> None:
    a = [0, None, 2, 3, float("nan")]
    b = [0, 1, 3, None, 4]
    assert ordinal_agreement(a, b).n == 2
    assert exact_agreement(a, b) == pytest.approx(0.5)


def test_kappa_undefined_on_one_value() -> None:
    assert np.isnan(weighted_kappa([2, 2, 2], [2, 2, 2]))
    assert np.isnan(krippendorff_alpha_ordinal([[2, 2, 2], [2, 2, 2]]))


def test_ordinal_alpha_equals_package_and_respects_order() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        data = rng.integers(0, 5, size=(3, 25)).astype(float)
        data[rng.random(data.shape) < 0.15] = np.nan
        ours = krippendorff_alpha_ordinal(data.tolist())
        ref = krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3, 4]
        )
        if set(np.unique(data[~np.isnan(data)])) == {0, 1, 2, 3, 4}:
            assert ours == pytest.approx(ref, abs=1e-12)
    # order matters: an adjacent disagreement costs less than a distant one
    near = krippendorff_alpha_ordinal([[0, 1, 2, 3, 4, 2], [0, 1, 2, 3, 4, 3]])
    far = krippendorff_alpha_ordinal([[0, 1, 2, 3, 4, 0], [0, 1, 2, 3, 4, 4]])
    assert near > far
