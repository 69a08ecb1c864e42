"""The alternative annotator test: may a model replace a human annotator? (Calderon et al. 2025)

From items labelled by two or more humans, each human ``j`` in turn is left out and both
the model and ``j`` are scored against the *others'* labels of the same item: the alignment
``S`` is the share of the others who gave the same label (nominal) or minus the absolute
difference from the others' mean (ordinal or numeric). On item ``i`` the model wins when
``S_model ≥ S_j`` and ``j`` wins when ``S_j ≥ S_model`` (a tie is a win for both), so
``d_i = 1[j wins] − 1[model wins]`` is in {−1, 0, 1}. ``H0_j``: the model's winning rate is
at most ``j``'s less a margin ``ε`` (``mean d ≥ ε``), tested one-sided by a t test of
``mean d − ε`` on the items ``j`` labelled. The ``p``-values of all annotators are adjusted by
Benjamini–Yekutieli (valid under any dependence: the annotators share items), and the
*winning rate* ω is the share of annotators whose ``H0`` is rejected at ``q``; the model may
replace the annotators when ω ≥ 0.5. ε is 0.2 for skilled annotators, 0.1 for crowd workers
(the paper's guidance); an annotator with fewer than ``min_items`` items is not tested, and
fewer than ``min_items`` items with two humans in all gives *too few*.

Pure functions on plain labels (no I/O).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["AltTestResult", "AnnotatorTest", "alt_test", "by_adjust"]

Verdict = Literal["may replace", "may not replace", "too few"]
K = TypeVar("K", bound=Hashable)
#: Items with two or more human labels the test needs (the issue's floor; the paper's ≥ 50).
MIN_ITEMS = 50


@dataclass(frozen=True)
class AnnotatorTest:
    """One left-out annotator's test.

    Attributes:
        annotator: Who was left out.
        n_items: Items that annotator labelled beside at least one other human.
        model_wins: The model's winning rate against the others.
        annotator_wins: The annotator's winning rate against the others.
        p_value: One-sided p of ``H0: annotator_wins − model_wins ≥ ε``.
        p_adjusted: Benjamini–Yekutieli adjusted p (over the tested annotators).
        rejected: Whether ``H0`` is rejected at ``q`` (the model is as good, within ε).
    """

    annotator: str
    n_items: int
    model_wins: float
    annotator_wins: float
    p_value: float
    p_adjusted: float
    rejected: bool


@dataclass(frozen=True)
class AltTestResult:
    """The test over every annotator, with the winning rate and the verdict."""

    annotators: tuple[AnnotatorTest, ...]
    winning_rate: float
    verdict: Verdict
    n_items: int
    epsilon: float
    q: float


def by_adjust(p: ArrayLike) -> np.ndarray:
    """Benjamini–Yekutieli adjusted p-values (step-up, capped at 1)."""
    pv = np.asarray(p, dtype=float)
    m = pv.size
    if m == 0:
        return pv
    c = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(pv)
    ranked = pv[order] * m * c / np.arange(1, m + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(ranked, 1.0)
    return out


def _alignment(label: float | str, others: Sequence[float | str], *, nominal: bool) -> float:
    if nominal:
        return sum(1.0 for o in others if o == label) / len(others)
    return -abs(float(label) - float(np.mean([float(o) for o in others])))


def alt_test(
    model: Mapping[K, float | str],
    humans: Mapping[K, Mapping[str, float | str]],
    *,
    nominal: bool,
    epsilon: float = 0.2,
    q: float = 0.05,
    min_items: int = MIN_ITEMS,
) -> AltTestResult:
    """Run the alternative annotator test (module docstring).

    Args:
        model: ``item -> model label``.
        humans: ``item -> {annotator: label}``; items with fewer than two humans, or no
            model label, are left out.
        nominal: Labels are categories (agreement share) rather than numbers (distance).
        epsilon: The margin the model may trail a human by.
        q: The BY-adjusted level.
        min_items: Items with two or more humans the test needs (and each annotator's own
            minimum to be tested).

    Raises:
        ValueError: ε outside [0, 1) or q outside (0, 1).
    """
    if not 0.0 <= epsilon < 1.0 or not 0.0 < q < 1.0:
        raise ValueError("epsilon must be in [0, 1) and q in (0, 1)")
    d: dict[str, list[float]] = defaultdict(list)
    w_model: dict[str, list[float]] = defaultdict(list)
    w_human: dict[str, list[float]] = defaultdict(list)
    n_items = 0
    for item, votes in humans.items():
        if item not in model or len(votes) < 2:
            continue
        n_items += 1
        f = model[item]
        for j, hj in votes.items():
            others = [v for a, v in votes.items() if a != j]
            s_f = _alignment(f, others, nominal=nominal)
            s_h = _alignment(hj, others, nominal=nominal)
            wf, wh = float(s_f >= s_h), float(s_h >= s_f)
            w_model[j].append(wf)
            w_human[j].append(wh)
            d[j].append(wh - wf)
    tests: list[tuple[str, int, float, float, float]] = []
    for j in sorted(d):
        x = np.asarray(d[j])
        if x.size < min_items:
            continue
        sd = float(x.std(ddof=1))
        gap = float(x.mean()) - epsilon
        if sd == 0.0:
            p = 0.0 if gap < 0 else 1.0
        else:
            p = float(stats.t.cdf(gap / (sd / math.sqrt(x.size)), x.size - 1))
        tests.append((j, int(x.size), float(np.mean(w_model[j])), float(np.mean(w_human[j])), p))
    adjusted = by_adjust([t[4] for t in tests])
    rows = tuple(
        AnnotatorTest(j, n, wm, wh, p, float(pa), bool(pa < q))
        for (j, n, wm, wh, p), pa in zip(tests, adjusted, strict=True)
    )
    if n_items < min_items or not rows:
        return AltTestResult(rows, math.nan, "too few", n_items, epsilon, q)
    omega = sum(r.rejected for r in rows) / len(rows)
    verdict: Verdict = "may replace" if omega >= 0.5 else "may not replace"
    return AltTestResult(rows, omega, verdict, n_items, epsilon, q)
