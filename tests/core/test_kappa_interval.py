"""Cohen's κ with a stem-cluster bootstrap interval (driftlens_core.agreement)."""

from __future__ import annotations

import math
import random

import pytest
from sklearn.metrics import cohen_kappa_score

from driftlens_core.agreement import kappa_cluster_interval


def _pairs(seed: int, n: int) -> tuple[list[str], list[str]]:
    r = random.Random(seed)
    a = [r.choice("xyz") for _ in range(n)]
    b = [x if r.random() < 0.7 else r.choice("xyz") for x in a]
    return a, b


def test_point_is_cohens_kappa_and_interval_brackets_it() -> None:
    a, b = _pairs(1, 120)
    ki = kappa_cluster_interval(a, b, [i // 4 for i in range(120)], n_boot=500, seed=3)
    assert ki.kappa == pytest.approx(cohen_kappa_score(a, b))
    assert (ki.n, ki.n_clusters) == (120, 30)
    assert ki.ci_low < ki.kappa < ki.ci_high
    again = kappa_cluster_interval(a, b, [i // 4 for i in range(120)], n_boot=500, seed=3)
    assert again == ki


def test_resampling_clusters_of_copies_widens_the_interval() -> None:
    # Every item repeated 6 times (a stem's paraphrases that all agree): resampling items
    # treats 240 copies as independent; resampling stems sees only 40 units.
    a, b = _pairs(2, 40)
    a6 = [x for x in a for _ in range(6)]
    b6 = [x for x in b for _ in range(6)]
    stems = [i // 6 for i in range(240)]
    by_stem = kappa_cluster_interval(a6, b6, stems, n_boot=1000, seed=0)
    by_item = kappa_cluster_interval(a6, b6, list(range(240)), n_boot=1000, seed=0)
    assert by_stem.kappa == pytest.approx(by_item.kappa)
    assert (by_stem.ci_high - by_stem.ci_low) > 1.8 * (by_item.ci_high - by_item.ci_low)


def test_missing_labels_dropped_and_undefined_cases_are_nan() -> None:
    ki = kappa_cluster_interval(["x", None, "y", "x"], ["x", "y", "y", ""], [0, 1, 2, 3], n_boot=50)
    assert ki.n == 2 and ki.n_clusters == 2
    one = kappa_cluster_interval(["x", "x"], ["x", "x"], [0, 1], n_boot=50)
    assert math.isnan(one.kappa) and math.isnan(one.ci_low)
    single = kappa_cluster_interval(["x", "y"], ["x", "y"], [0, 0], n_boot=50)
    assert single.kappa == 1.0 and math.isnan(single.ci_low)
