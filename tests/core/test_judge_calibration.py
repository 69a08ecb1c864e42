"""Judge-vs-human calibration against independent oracles: sklearn's cohen_kappa_score
with the full scale, krippendorff, statsmodels' Wilson interval, a plain bootstrap loop."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from driftlens_core.judge_calibration import judge_calibration

LEVELS = [0, 1, 2, 3, 4]


def _pairs(seed: int = 0, n: int = 120) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 4, size=n)  # level 4 never used by the humans
    judge = np.clip(human + rng.choice([-1, 0, 0, 0, 1, 1], size=n), 0, 4)
    return judge.tolist(), human.tolist()


def test_agreement_matches_sklearn_and_krippendorff() -> None:
    judge, human = _pairs()
    got = judge_calibration(judge, human, levels=LEVELS, ordinal=True, n_boot=200, seed=1)
    assert got.kappa == pytest.approx(cohen_kappa_score(human, judge, labels=LEVELS))
    assert got.weighted_kappa == pytest.approx(
        cohen_kappa_score(human, judge, labels=LEVELS, weights="quadratic")
    )
    alpha = krippendorff.alpha(
        reliability_data=np.array([human, judge], dtype=float),
        level_of_measurement="ordinal",
        value_domain=LEVELS,
    )
    assert got.alpha == pytest.approx(alpha)
    assert got.bias == pytest.approx(np.mean(np.array(judge) - np.array(human)))
    assert got.confusion[1][2] == sum(h == 1 and j == 2 for h, j in zip(human, judge, strict=True))


def test_class_rates_are_wilson_intervals() -> None:
    judge, human = _pairs(3)
    got = judge_calibration(judge, human, levels=LEVELS, n_boot=50, seed=0)
    for c in got.classes:
        pos = [j for j, h in zip(judge, human, strict=True) if h == c.label]
        neg = [j for j, h in zip(judge, human, strict=True) if h != c.label]
        tp, tn = sum(j == c.label for j in pos), sum(j != c.label for j in neg)
        assert (c.n_positive, c.n_negative) == (len(pos), len(neg))
        if pos:
            lo, hi = proportion_confint(tp, len(pos), alpha=0.05, method="wilson")
            assert c.tpr == pytest.approx(tp / len(pos)) and c.tpr_ci == pytest.approx((lo, hi))
        lo, hi = proportion_confint(tn, len(neg), alpha=0.05, method="wilson")
        assert c.tnr_ci == pytest.approx((lo, hi))


def test_kappa_interval_is_the_plain_bootstrap_loop() -> None:
    judge, human = _pairs(5, n=60)
    got = judge_calibration(judge, human, levels=LEVELS, n_boot=300, seed=7)
    rng = np.random.default_rng(7)
    draws = rng.integers(0, 60, size=(300, 60))
    reps = []
    for d in draws:
        hh = [human[i] for i in d]
        jj = [judge[i] for i in d]
        reps.append(cohen_kappa_score(hh, jj, labels=LEVELS))
    assert got.kappa_ci == pytest.approx(tuple(np.percentile(reps, [2.5, 97.5])))


def test_bad_labels_raise() -> None:
    with pytest.raises(ValueError, match="not on the scale"):
        judge_calibration([0, 9], [0, 1], levels=LEVELS)
