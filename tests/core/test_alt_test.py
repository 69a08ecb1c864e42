"""The alternative annotator test: BY adjustment, the t test, and known doses both ways."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats

from driftlens_core.alt_test import alt_test, by_adjust


def test_by_adjust_equals_scipy() -> None:
    rng = np.random.default_rng(0)
    for m in (1, 3, 10, 40):
        p = rng.uniform(0, 0.2, m)
        assert by_adjust(p) == pytest.approx(stats.false_discovery_control(p, method="by"))


def _study(n_items: int, model_flip: float, seed: int) -> tuple[dict, dict]:
    """Three humans who each slip on 30 % of items; a model that slips on ``model_flip``."""
    rng = random.Random(seed)
    labels = ["a", "b", "c", "d"]
    humans: dict[int, dict[str, str]] = {}
    model: dict[int, str] = {}
    for i in range(n_items):
        truth = rng.choice(labels)
        humans[i] = {f"h{j}": truth if rng.random() > 0.3 else rng.choice(labels) for j in range(3)}
        model[i] = truth if rng.random() > model_flip else rng.choice(labels)
    return model, humans


def test_a_model_at_the_truth_may_replace_the_annotators() -> None:
    model, humans = _study(300, model_flip=0.0, seed=1)
    res = alt_test(model, humans, nominal=True, epsilon=0.1)
    assert res.verdict == "may replace" and res.winning_rate == 1.0
    assert all(r.model_wins > r.annotator_wins for r in res.annotators)


def test_a_guessing_model_may_not() -> None:
    model, humans = _study(300, model_flip=1.0, seed=2)
    res = alt_test(model, humans, nominal=True, epsilon=0.1)
    assert res.verdict == "may not replace" and res.winning_rate == 0.0


def test_too_few_items_is_its_own_verdict() -> None:
    model, humans = _study(30, model_flip=0.0, seed=3)
    assert alt_test(model, humans, nominal=True).verdict == "too few"


def test_p_value_is_the_one_sided_t_test_of_the_differences() -> None:
    model, humans = _study(120, model_flip=0.4, seed=4)
    res = alt_test(model, humans, nominal=True, epsilon=0.2)
    j = res.annotators[0]
    d = []
    for item, votes in humans.items():
        others = [v for a, v in votes.items() if a != j.annotator]
        s_f = sum(o == model[item] for o in others) / len(others)
        s_h = sum(o == votes[j.annotator] for o in others) / len(others)
        d.append(float(s_h >= s_f) - float(s_f >= s_h))
    oracle = stats.ttest_1samp(d, 0.2, alternative="less").pvalue
    assert j.p_value == pytest.approx(oracle, rel=1e-9)


def test_ordinal_alignment_uses_the_distance_to_the_others_mean() -> None:
    humans = {i: {"h0": 2.0, "h1": 3.0, "h2": 3.0} for i in range(60)}
    close = alt_test({i: 3.0 for i in range(60)}, humans, nominal=False, epsilon=0.1)
    far = alt_test({i: 0.0 for i in range(60)}, humans, nominal=False, epsilon=0.1)
    assert close.verdict == "may replace" and far.verdict == "may not replace"
