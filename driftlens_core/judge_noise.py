"""Judge noise in an interval: verdict flip rates and a two-stage (items, judge) bootstrap.

An instrument's headline is a mean over items of a judge's verdicts. Resampling only the
items treats that judgement as the truth. Noise that is independent per item is already in
the item bootstrap (it is part of each item's value); what it leaves out is what a whole
judgement shares: a judge's leniency, a temperature or seed that shifts every verdict, a
different judge model. With ``K`` judgements of every item (column 0 the stored one, the
others re-judgements with new seeds or by other judges), the *two-stage bootstrap*
resamples the items (stage 1, the stored judgement) and then a judgement-level shift of
the mean (stage 2). The judgement-level variance is estimated without the per-item noise
it also carries (``τ̂² = var(column means) − s²_within / n``, floored at 0), and the shift
is drawn as ``τ̂ · T`` with ``T`` Student-t on ``K − 1`` degrees of freedom: ``τ̂`` rests
on ``K`` judgements only, and a normal shift would under-cover as a z-interval on ``K``
values does. A judge with no shared component adds nothing; a lenient/strict pair widens
the interval by what separates them, the more so the fewer judgements there are. Pure functions on
arrays (no I/O).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from driftlens_core.bootstrap import as_generator

__all__ = ["JudgeNoiseInterval", "flip_rate", "two_stage_bootstrap"]


@dataclass(frozen=True)
class JudgeNoiseInterval:
    """The headline mean with and without the judge's noise.

    Attributes:
        mean: Mean of the first verdict of each item (the stored judgement).
        judge_free: ``(low, high)`` of the items-only percentile bootstrap.
        judge_inclusive: ``(low, high)`` of the two-stage bootstrap.
        var_items: Bootstrap variance of the items-only means.
        var_total: ``var_items`` plus the judgement-level variance ``τ̂²``.
        judge_share: The judge's share of the variance, ``τ̂² / var_total``.
        n_items: Items.
        n_verdicts: Verdicts per item.
        level: Interval level.
    """

    mean: float
    judge_free: tuple[float, float]
    judge_inclusive: tuple[float, float]
    var_items: float
    var_total: float
    judge_share: float
    n_items: int
    n_verdicts: int
    level: float


def two_stage_bootstrap(
    verdicts: np.ndarray,
    *,
    n_boot: int = 2000,
    seed: int | np.random.Generator | None = None,
    level: float = 0.95,
) -> JudgeNoiseInterval:
    """Items-only and two-stage bootstrap intervals of the mean verdict.

    Draws, in this order: ``rng.integers(0, n, (n_boot, n))`` (the items of every
    replicate) then, when ``k > 1``, ``rng.standard_t(k - 1, n_boot)``. Replicate ``b``'s
    judge-free mean is ``mean(v[items_b, 0])``; its judge-inclusive mean adds
    ``τ̂ · T_b`` (module docstring). The judge's share is ``τ̂² / (var_items + τ̂²)``.

    Args:
        verdicts: ``(n_items, k)`` finite verdicts, one column per judgement, column 0 the
            stored one.
        n_boot: Replicates.
        seed: Seed or generator.
        level: Interval level.

    Raises:
        ValueError: not a 2-d array with at least one item and verdict, non-finite values,
            ``n_boot < 1`` or a level outside (0, 1).
    """
    v = np.asarray(verdicts, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] < 1 or v.shape[1] < 1:
        raise ValueError("verdicts must be a 2-d array (items x verdicts), not empty")
    if not np.all(np.isfinite(v)):
        raise ValueError("verdicts must be finite")
    if n_boot < 1 or not 0.0 < level < 1.0:
        raise ValueError("n_boot must be >= 1 and level in (0, 1)")
    rng = as_generator(seed)
    n, k = v.shape
    items = rng.integers(0, n, size=(n_boot, n))
    free = v[items, 0].mean(axis=1)
    tau2 = 0.0
    shifts: np.ndarray = np.zeros(n_boot)
    if k > 1:
        t = rng.standard_t(k - 1, size=n_boot)
        within = float(v.var(axis=1, ddof=1).mean())
        tau2 = max(0.0, float(v.mean(axis=0).var(ddof=1)) - within / n)
        shifts = math.sqrt(tau2) * t
    both = free + shifts
    tail = (1.0 - level) / 2.0 * 100.0
    lo_f, hi_f = np.percentile(free, [tail, 100.0 - tail])
    lo_b, hi_b = np.percentile(both, [tail, 100.0 - tail])
    var_f = float(free.var(ddof=1)) if n_boot > 1 else 0.0
    var_b = var_f + tau2
    share = 0.0 if var_b <= 0.0 else tau2 / var_b
    return JudgeNoiseInterval(
        mean=float(v[:, 0].mean()),
        judge_free=(float(lo_f), float(hi_f)),
        judge_inclusive=(float(lo_b), float(hi_b)),
        var_items=var_f,
        var_total=var_b,
        judge_share=share,
        n_items=n,
        n_verdicts=k,
        level=level,
    )


def flip_rate(reference: np.ndarray, other: np.ndarray) -> float:
    """Share of (item, verdict) pairs where ``other`` differs from the item's ``reference``.

    Args:
        reference: ``(n,)`` verdicts (NaN: no verdict, the item is skipped).
        other: ``(n,)`` or ``(n, k)`` verdicts of the same items (NaN pairs are skipped).

    Returns:
        The flip rate, NaN when no pair has both verdicts.
    """
    ref = np.asarray(reference, dtype=np.float64)
    oth = np.asarray(other, dtype=np.float64)
    if oth.ndim == 1:
        oth = oth[:, None]
    if oth.shape[0] != ref.shape[0]:
        raise ValueError("reference and other must have one row per item")
    r = np.broadcast_to(ref[:, None], oth.shape)
    both = np.isfinite(r) & np.isfinite(oth)
    if not both.any():
        return float("nan")
    return float((r[both] != oth[both]).mean())
