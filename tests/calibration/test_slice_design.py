"""Stratified and active calibration slices: known inclusion probabilities (issue 35 item 3)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.selection import TaskSpec
from annotation.slice_design import (
    INCLUSION_FIELD,
    active_draw,
    poisson_probabilities,
    proportional_allocation,
    stratified_draw,
)
from storage.errors import InputError


def _tasks(n: int = 200) -> list[TaskSpec]:
    # three strata of unequal size; y is what a human would say, d the judges' spread
    out = []
    for i in range(n):
        s = "a" if i < 120 else ("b" if i < 180 else "c")
        out.append(TaskSpec(f"t{i}", {"stratum": s, "y": float(i % 7), "d": float(i % 7) / 2}))
    return out


def test_proportional_allocation_sums_and_respects_sizes() -> None:
    assert proportional_allocation([120, 60, 20], 40) == [24, 12, 4]
    assert sum(proportional_allocation([5, 1, 1, 93], 10)) == 10
    assert min(proportional_allocation([5, 1, 1, 93], 10)) >= 1  # every stratum drawn
    assert proportional_allocation([3, 2], 50) == [3, 2]


def test_stratified_probabilities_are_k_over_m_and_weight_back_to_the_frame() -> None:
    chosen = stratified_draw(_tasks(), field="stratum", limit=40, seed=3)
    assert len(chosen) == 40
    by = {s: [t for t in chosen if t.data["stratum"] == s] for s in "abc"}
    assert {s: len(v) for s, v in by.items()} == {"a": 24, "b": 12, "c": 4}
    assert {t.data[INCLUSION_FIELD] for t in by["c"]} == {4 / 20}
    # Horvitz-Thompson count of a stratified draw is the frame's size exactly
    assert sum(1 / t.data[INCLUSION_FIELD] for t in chosen) == pytest.approx(200)
    again = stratified_draw(_tasks(), field="stratum", limit=40, seed=3)
    assert [t.key for t in again] == [t.key for t in chosen]  # seeded
    other = stratified_draw(_tasks(), field="stratum", limit=40, seed=4)
    assert [t.key for t in other] != [t.key for t in chosen]


def test_stratify_by_a_missing_field_is_one_sentence() -> None:
    with pytest.raises(InputError, match=r"no field 'nope'") as err:
        stratified_draw(_tasks(), field="nope", limit=10, seed=0)
    assert "\n" not in str(err.value)


def test_poisson_probabilities_sum_to_the_size_and_cap_at_one() -> None:
    w = [1.0] * 50 + [100.0] * 3
    p = poisson_probabilities(w, 10)
    assert sum(p) == pytest.approx(10)
    assert max(p) == 1.0 and p[-1] == 1.0


def test_active_slice_leans_on_disagreement_and_stays_unbiased_with_its_weights() -> None:
    tasks = _tasks()
    y = np.array([t.data["y"] for t in tasks])
    d = {t.key: t.data["d"] for t in tasks}
    ht, naive, sizes, lean = [], [], [], []
    for seed in range(400):
        chosen = active_draw(_tasks(), d, limit=30, seed=seed)
        ys = np.array([t.data["y"] for t in chosen])
        w = np.array([1 / t.data[INCLUSION_FIELD] for t in chosen])
        ht.append(float(np.sum(w * ys) / np.sum(w)))
        naive.append(float(ys.mean()))
        sizes.append(len(chosen))
        lean.append(np.mean([t.data["d"] for t in chosen]))
    # more where the judges disagree: the chosen tasks' spread is above the frame's
    assert np.mean(lean) > np.mean(list(d.values())) + 0.3
    assert abs(np.mean(sizes) - 30) < 1.0  # the size is random around the limit
    # known dose: weighted by its stored probabilities the slice is (nearly, Hajek)
    # unbiased; read as a simple random slice it is biased towards high-disagreement y
    assert abs(np.mean(ht) - y.mean()) < 0.08
    assert np.mean(naive) - y.mean() > 0.5
