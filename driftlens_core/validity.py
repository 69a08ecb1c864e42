"""Construct-validity checks of the drift instrument, one typed result per model (SPEC §7).

* **Specificity**: pragmatic-noise conditions must sit at the noise floor, judged with an
  equivalence margin δ (default 0.2 d_rel): a noise condition passes when its 90% CI lies
  inside ±δ, fails when it is significantly above the floor (BH-adjusted p ≤ 0.05) with
  d_rel > δ, and is inconclusive otherwise (the check is then ``passed = None``). With many
  questions significance alone would fail a negligible difference.
* **Sensitivity**: life events (strong, relevant memories) must sit above the floor with
  adjusted ``p < 0.001`` and ``d_rel > 0``. With B bootstrap replicates the smallest
  p-value is ``2/(B+1)``, so B ≥ 2,000 is needed for this check to be passable.
* **Convergent validity**: the metrics must rank the conditions alike: Spearman ρ (and
  Pearson r) between the metrics' condition means; pass when ρ ≥ ``min_rho`` (0.7; the
  reference study found 0.94–0.99). With more than two metrics the weakest pair decides.

A check that cannot be run (no life-event conditions, one metric) has ``passed = None``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats


@dataclass(frozen=True)
class Check:
    """Outcome of one validity check."""

    passed: bool | None
    detail: str
    failing: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "detail": self.detail, "failing": list(self.failing)}


@dataclass(frozen=True)
class Convergence:
    """Agreement between metrics across conditions."""

    spearman: float
    pearson: float
    pairs: tuple[tuple[str, str, float, float], ...]  # (metric a, metric b, rho, r)
    check: Check

    def to_dict(self) -> dict[str, object]:
        return {
            "spearman": self.spearman,
            "pearson": self.pearson,
            "pairs": {f"{a}~{b}": {"spearman": rho, "pearson": r} for a, b, rho, r in self.pairs},
            "passed": self.check.passed,
            "detail": self.check.detail,
        }


@dataclass(frozen=True)
class MetricValidity:
    """Specificity and sensitivity of one metric."""

    specificity: Check
    sensitivity: Check

    def to_dict(self) -> dict[str, object]:
        return {
            "specificity": self.specificity.to_dict(),
            "sensitivity": self.sensitivity.to_dict(),
        }


@dataclass(frozen=True)
class ModelValidity:
    """All validity checks of one model."""

    metrics: tuple[tuple[str, MetricValidity], ...]
    convergent: Convergence

    @property
    def passed(self) -> bool | None:
        results = [c.passed for _, m in self.metrics for c in (m.specificity, m.sensitivity)]
        results.append(self.convergent.check.passed)
        known = [r for r in results if r is not None]
        return all(known) if known else None


#: Default equivalence margin of the specificity check, in d_rel units.
SPECIFICITY_MARGIN = 0.2


def specificity(
    names: Sequence[str],
    classes: Sequence[str],
    d_rel: ArrayLike,
    p_adjusted: ArrayLike,
    *,
    alpha: float = 0.05,
    ci90_low: ArrayLike | None = None,
    ci90_high: ArrayLike | None = None,
    margin: float = SPECIFICITY_MARGIN,
) -> Check:
    """Noise conditions are at the floor, judged with an equivalence margin ``±margin``.

    With the 90% CIs given, a noise condition *passes* when its CI lies inside
    ``[−margin, +margin]``, *fails* when it is significantly above the floor (adjusted
    ``p ≤ alpha``) with ``d_rel > margin``, and is *inconclusive* otherwise. The check passes
    when every noise condition passes, fails when any fails, and is ``None``
    (inconclusive) otherwise. Without CIs it falls back to significance alone.
    """
    d = np.asarray(d_rel, dtype=np.float64)
    p = np.asarray(p_adjusted, dtype=np.float64)
    idx = [i for i, k in enumerate(classes) if k == "noise"]
    if not idx:
        return Check(None, "no noise conditions")
    idx = [i for i in idx if np.isfinite(p[i]) and np.isfinite(d[i])]
    if not idx:
        return Check(None, "no noise condition could be tested (see the flags)")
    if ci90_low is None or ci90_high is None:
        failing = tuple(names[i] for i in idx if p[i] <= alpha and d[i] > 0)
        if failing:
            return Check(
                False, f"{len(failing)} of {len(idx)} noise conditions above the floor", failing
            )
        return Check(
            True, f"none of {len(idx)} noise conditions above the floor (adjusted p > {alpha})"
        )
    lo = np.asarray(ci90_low, dtype=np.float64)
    hi = np.asarray(ci90_high, dtype=np.float64)
    fail = tuple(names[i] for i in idx if p[i] <= alpha and d[i] > margin)
    ok = [i for i in idx if lo[i] >= -margin and hi[i] <= margin]
    unsure = tuple(names[i] for i in idx if names[i] not in fail and i not in ok)
    ps = ", ".join(f"{names[i]} p = {p[i]:.3g}" for i in idx)
    where = f"margin ±{margin:g} d_rel, 90% CI; {ps}"
    if fail:
        return Check(
            False,
            f"{len(fail)} of {len(idx)} noise conditions above the margin ({where})",
            fail,
        )
    if unsure:
        return Check(
            None,
            f"inconclusive: {len(unsure)} of {len(idx)} noise conditions neither inside nor "
            f"above the margin ({where})",
            unsure,
        )
    return Check(True, f"all {len(idx)} noise conditions inside the margin ({where})")


def sensitivity(
    names: Sequence[str],
    classes: Sequence[str],
    d_rel: ArrayLike,
    p_adjusted: ArrayLike,
    *,
    alpha: float = 0.001,
) -> Check:
    """Life-event conditions are above the floor (see module docstring)."""
    d = np.asarray(d_rel, dtype=np.float64)
    p = np.asarray(p_adjusted, dtype=np.float64)
    idx = [i for i, k in enumerate(classes) if k == "life_event"]
    if not idx:
        return Check(None, "no life-event conditions")
    if not any(np.isfinite(p[i]) and np.isfinite(d[i]) for i in idx):
        return Check(None, "no life-event condition could be tested (see the flags)")
    failing = tuple(names[i] for i in idx if not (p[i] < alpha and d[i] > 0))
    if failing:
        return Check(
            False,
            f"{len(failing)} of {len(idx)} life events not above the floor at p < {alpha}",
            failing,
        )
    return Check(True, f"all {len(idx)} life events above the floor (adjusted p < {alpha})")


def convergent_validity(
    condition_means: Mapping[str, ArrayLike], *, min_rho: float = 0.7
) -> Convergence:
    """Spearman and Pearson correlation between metrics' condition means.

    Args:
        condition_means: metric name → per-condition means (same condition order).
        min_rho: smallest Spearman ρ that passes.
    """
    metrics = list(condition_means)
    pairs = []
    for a, b in itertools.combinations(metrics, 2):
        x = np.asarray(condition_means[a], dtype=np.float64)
        y = np.asarray(condition_means[b], dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
            rho = r = float("nan")
        else:
            rho = float(stats.spearmanr(x[ok], y[ok]).statistic)
            r = float(stats.pearsonr(x[ok], y[ok]).statistic)
        pairs.append((a, b, rho, r))
    if not pairs:
        return Convergence(float("nan"), float("nan"), (), Check(None, "only one metric"))
    finite = [p for p in pairs if np.isfinite(p[2])]
    if not finite:
        return Convergence(
            float("nan"),
            float("nan"),
            tuple(pairs),
            Check(None, "fewer than three conditions with varying means"),
        )
    worst = min(finite, key=lambda p: p[2])
    passed = worst[2] >= min_rho
    detail = f"Spearman rho {worst[2]:.3f} between {worst[0]} and {worst[1]} (pass at >= {min_rho})"
    failing = () if passed else (f"{worst[0]}~{worst[1]}",)
    return Convergence(worst[2], worst[3], tuple(pairs), Check(passed, detail, failing))
