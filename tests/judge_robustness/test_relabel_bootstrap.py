"""The reasoning headline's two-stage bootstrap against a plain resampling loop."""

from __future__ import annotations

import numpy as np
import pytest

from study.reasoning.relabel_bootstrap import relabel_bootstrap


def _loop(
    drift: np.ndarray, question: np.ndarray, treated: np.ndarray, null: np.ndarray,
    n_boot: int, seed: int,
) -> tuple[list[float], list[float]]:  # fmt: skip
    """Questions with replacement, then one labeling per drawn question, pair by pair."""
    rng = np.random.default_rng(seed)
    n_q, k = int(question.max()) + 1, drift.shape[1]
    picks = rng.integers(0, n_q, size=(n_boot, n_q))
    cols = rng.integers(0, k, size=(n_boot, n_q))
    free, both = [], []
    for b in range(n_boot):
        t_f, z_f, t_b, z_b = [], [], [], []
        for q, c in zip(picks[b], cols[b], strict=True):
            for i in range(len(question)):
                if question[i] != q:
                    continue
                if treated[i]:
                    t_f.append(drift[i, 0])
                    t_b.append(drift[i, c])
                elif null[i]:
                    z_f.append(drift[i, 0])
                    z_b.append(drift[i, c])
        free.append(np.mean(t_f) - np.mean(z_f) if t_f and z_f else np.nan)
        both.append(np.mean(t_b) - np.mean(z_b) if t_b and z_b else np.nan)
    return free, both


def test_relabel_bootstrap_matches_a_plain_two_stage_loop() -> None:
    rng = np.random.default_rng(5)
    question = np.repeat(np.arange(6), 3)
    treated = np.tile([True, True, False], 6)
    drift = rng.uniform(0, 1, size=(18, 3)) + treated[:, None] * 0.3
    drift[:, 1:] += rng.normal(0, 1.0, size=(18, 2))  # the relabelings disagree a lot
    got = relabel_bootstrap(drift, question, treated, ~treated, n_boot=300, seed=11)
    free, both = _loop(drift, question, treated, ~treated, 300, 11)
    assert got.estimate == pytest.approx(drift[treated, 0].mean() - drift[~treated, 0].mean())
    assert got.judge_free == pytest.approx(tuple(np.nanpercentile(free, [2.5, 97.5])))
    assert got.judge_inclusive == pytest.approx(tuple(np.nanpercentile(both, [2.5, 97.5])))
    share = 1 - np.nanvar(free, ddof=1) / np.nanvar(both, ddof=1)
    assert got.judge_share == pytest.approx(max(0.0, share))
    assert got.judge_share > 0


def test_identical_relabelings_add_no_noise() -> None:
    question = np.repeat(np.arange(5), 2)
    treated = np.tile([True, False], 5)
    column = np.linspace(0, 1, 10)
    got = relabel_bootstrap(
        np.stack([column] * 3, axis=1), question, treated, ~treated, n_boot=200, seed=1
    )
    assert got.judge_inclusive == got.judge_free and got.judge_share == 0.0
