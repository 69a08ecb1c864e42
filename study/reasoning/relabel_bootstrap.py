"""The reasoning-drift headline with and without step-labeler noise (pure numpy, no I/O).

The headline of one condition class is the class-mean drift of its pairs minus the mean
drift of the baseline-vs-baseline pairs (the noise floor, class ``none``). With ``K``
labelings of the same responses (column 0 the stored labels, the others the same labeler
with new seeds), the **two-stage bootstrap** resamples the questions with replacement
(stage 1) and then, for every drawn question, one of the ``K`` labelings (stage 2); every
pair of that question takes its drift under that labeling. The judge-free interval keeps
stage 1 only (column 0 throughout). The labeler's share of the variance is what stage 2
adds: ``1 - var(free) / var(inclusive)``, floored at 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HeadlineInterval:
    """One class's drift above the noise floor, with and without the labeler's noise."""

    estimate: float
    judge_free: tuple[float, float]
    judge_inclusive: tuple[float, float]
    judge_share: float


def _sums(values: np.ndarray, question: np.ndarray, mask: np.ndarray, n_q: int) -> np.ndarray:
    """``(n_q, K)`` sums of ``values`` over the masked pairs of every question."""
    out = np.zeros((n_q, values.shape[1]))
    np.add.at(out, question[mask], values[mask])
    return out


def _percentile(x: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0 * 100.0
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.percentile(finite, [tail, 100.0 - tail])
    return (float(lo), float(hi))


def relabel_bootstrap(
    drift: np.ndarray,
    question: np.ndarray,
    treated: np.ndarray,
    null: np.ndarray,
    *,
    n_boot: int = 2000,
    seed: int | np.random.Generator = 0,
    level: float = 0.95,
) -> HeadlineInterval:
    """``mean(drift[treated]) - mean(drift[null])`` with both intervals (module doc).

    Draws, in this order: ``rng.integers(0, Q, (n_boot, Q))`` (the questions of every
    replicate) then, when ``K > 1``, ``rng.integers(0, K, (n_boot, Q))`` (the labeling of
    each drawn question). A replicate without a treated or a null pair gives NaN and is
    left out of the percentiles.

    Args:
        drift: ``(n_pairs, K)`` finite drift of every pair under every labeling.
        question: ``(n_pairs,)`` question index of every pair, in ``0..Q-1``.
        treated: ``(n_pairs,)`` the pairs of the class.
        null: ``(n_pairs,)`` the baseline-vs-baseline pairs.
        n_boot: Replicates.
        seed: Seed or generator.
        level: Interval level.

    Raises:
        ValueError: shapes that disagree, no treated or no null pair, non-finite drift.
    """
    d = np.asarray(drift, dtype=np.float64)
    q = np.asarray(question, dtype=np.int64)
    t = np.asarray(treated, dtype=bool)
    z = np.asarray(null, dtype=bool)
    if d.ndim != 2 or not (d.shape[0] == q.shape[0] == t.shape[0] == z.shape[0]):
        raise ValueError("drift must be (pairs x labelings) with one question and mask per pair")
    if not t.any() or not z.any():
        raise ValueError("the headline needs at least one treated and one null pair")
    if not np.all(np.isfinite(d[t | z])):
        raise ValueError("drift must be finite")
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    n_q = int(q.max()) + 1
    k = d.shape[1]
    s_t, s_z = _sums(d, q, t, n_q), _sums(d, q, z, n_q)
    n_t = np.bincount(q[t], minlength=n_q).astype(np.float64)
    n_z = np.bincount(q[z], minlength=n_q).astype(np.float64)
    picks = rng.integers(0, n_q, size=(n_boot, n_q))
    cols = rng.integers(0, k, size=(n_boot, n_q)) if k > 1 else np.zeros_like(picks)
    with np.errstate(invalid="ignore", divide="ignore"):
        count_t, count_z = n_t[picks].sum(axis=1), n_z[picks].sum(axis=1)
        free = s_t[picks, 0].sum(axis=1) / count_t - s_z[picks, 0].sum(axis=1) / count_z
        both = s_t[picks, cols].sum(axis=1) / count_t - s_z[picks, cols].sum(axis=1) / count_z
    var_f = float(np.nanvar(free, ddof=1)) if n_boot > 1 else 0.0
    var_b = float(np.nanvar(both, ddof=1)) if n_boot > 1 else 0.0
    share = 0.0 if var_b <= 0.0 else max(0.0, 1.0 - var_f / var_b)
    return HeadlineInterval(
        estimate=float(d[t, 0].mean() - d[z, 0].mean()),
        judge_free=_percentile(free, level),
        judge_inclusive=_percentile(both, level),
        judge_share=share,
    )
