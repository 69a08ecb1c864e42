"""Statistics of rubric scores whose independent unit is the instance (a memory bank).

Every model answers every instance, each answer is scored by several judges, and an
instance may be rendered at several distractor doses. Rows of one instance are therefore
correlated, and the instance is the cluster that every interval here resamples (with
:func:`driftlens_core.bootstrap.cluster_bootstrap_sums`: a replicate draws instances with
replacement and keeps all their rows). Intervals are Hesterberg's expanded percentile
intervals (see :mod:`driftlens_core.bootstrap`) with the number of instances as ``n``.

* :func:`cluster_mean` — a mean of scores with its interval;
* :func:`paired_effect` — the mean of per-row paired differences (dose 6 minus dose 0 of
  the same instance and model), its 95% interval, the minimum detectable difference
  from the critical values of the test the interval applies (the expanded percentile
  interval with the number of instances as ``n``: ``mdd_factor(n) × SE``, 2.905 at 42
  instances, 2.8 only as ``n → ∞``; see :func:`driftlens_core.calibration.mdd_factor`)
  and the equivalence bound read off the 90% interval;
* :func:`cluster_slope` — the least-squares slope of scores on a dose with its interval;
* :func:`cluster_correlation` — Pearson and Spearman correlation of paired scores (two
  judges' totals) with intervals.

NaN values (a dimension not applicable) are left out of each statistic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from driftlens_core.bootstrap import Seed, as_generator, cluster_bootstrap_sums, percentile_interval
from driftlens_core.calibration import equivalence_bound, minimum_detectable

DEFAULT_RUBRIC_BOOTSTRAP = 2_000
#: What every interval here is, as the outputs name it. The expanded percentile interval is
#: the primary one because it keeps its coverage at the few dozen instances of a rubric
#: study, where the plain percentile and BCa intervals are too narrow
#: (``bench/conflicts_calibration.py`` compares all of them, ``docs/calibration.md``).
INTERVAL_METHOD = "instance-cluster bootstrap, expanded percentile interval (Hesterberg)"


def _codes(cluster: ArrayLike) -> tuple[NDArray[np.int64], int]:
    _, inv = np.unique(np.asarray(cluster), return_inverse=True)
    inv = inv.astype(np.int64).ravel()
    return inv, int(inv.max()) + 1 if inv.size else 0


def _finite_rows(
    cluster: ArrayLike, *columns: ArrayLike
) -> tuple[list[NDArray[np.float64]], NDArray[np.int64], int]:
    """The rows where every column is finite: the columns there, the rows' cluster codes, ``q``."""
    cols = [np.asarray(c, dtype=np.float64).ravel() for c in columns]
    keep = np.logical_and.reduce([np.isfinite(c) for c in cols])
    codes, q = _codes(np.asarray(cluster)[keep])
    return [c[keep] for c in cols], codes, q


def _per_cluster(
    codes: NDArray[np.int64], n: int, cols: list[NDArray[np.float64]]
) -> NDArray[np.float64]:
    out = np.zeros((n, len(cols)))
    for j, c in enumerate(cols):
        np.add.at(out[:, j], codes, c)
    return out


@dataclass(frozen=True)
class ClusterMean:
    """A mean over rows with its cluster-bootstrap interval."""

    mean: float
    ci_low: float
    ci_high: float
    se: float
    n: int
    n_clusters: int


def _interval(reps: NDArray[np.float64], level: float, n_clusters: int) -> tuple[float, float]:
    ok = reps[np.isfinite(reps)]
    if ok.size < 2 or n_clusters < 2:
        return float("nan"), float("nan")
    lo, hi = percentile_interval(ok, level, n_clusters=n_clusters)
    return float(lo[0]), float(hi[0])


def cluster_mean(
    cluster: ArrayLike,
    values: ArrayLike,
    *,
    n_boot: int = DEFAULT_RUBRIC_BOOTSTRAP,
    seed: Seed = None,
    level: float = 0.95,
) -> ClusterMean:
    """Mean of ``values`` with an instance-cluster bootstrap interval.

    Args:
        cluster: Cluster id of every row (the instance).
        values: The row values; NaN rows are left out.
        n_boot: Bootstrap replicates.
        seed: Seed or Generator (consumed in place).
        level: Confidence level.
    """
    (v,), codes, q = _finite_rows(cluster, values)
    nan = float("nan")
    if v.size == 0:
        return ClusterMean(nan, nan, nan, nan, 0, 0)
    per = _per_cluster(codes, q, [np.ones_like(v), v])
    sums = cluster_bootstrap_sums(per, n_boot=n_boot, seed=as_generator(seed))
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = sums[:, 1] / sums[:, 0]
    lo, hi = _interval(reps, level, q)
    se = float(np.nanstd(reps, ddof=1)) if q >= 2 else nan
    return ClusterMean(float(v.mean()), lo, hi, se, int(v.size), q)


@dataclass(frozen=True)
class PairedEffect:
    """A mean paired difference with its interval, MDD and equivalence bound."""

    mean_diff: float
    ci_low: float
    ci_high: float
    se: float
    mdd: float
    equivalence_bound: float
    n: int
    n_clusters: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the 95% interval lies on one side of 0."""
        return bool(self.ci_low > 0 or self.ci_high < 0)


def paired_effect(
    cluster: ArrayLike,
    differences: ArrayLike,
    *,
    n_boot: int = DEFAULT_RUBRIC_BOOTSTRAP,
    seed: Seed = None,
) -> PairedEffect:
    """Mean of per-row paired differences with instance-cluster intervals.

    Each row is one (instance, model) pair: its score at the higher dose minus its score
    at the lower dose, so the instance's own difficulty cancels. The 90% interval (same
    replicates) gives the equivalence bound: the effect is within ``±bound`` at the 5%
    level (TOST).

    Args:
        cluster: Instance id of every row.
        differences: Paired differences; NaN rows are left out.
        n_boot: Bootstrap replicates.
        seed: Seed or Generator (consumed in place).
    """
    (d,), codes, q = _finite_rows(cluster, differences)
    nan = float("nan")
    if d.size == 0:
        return PairedEffect(nan, nan, nan, nan, nan, nan, 0, 0)
    per = _per_cluster(codes, q, [np.ones_like(d), d])
    sums = cluster_bootstrap_sums(per, n_boot=n_boot, seed=as_generator(seed))
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = sums[:, 1] / sums[:, 0]
    lo, hi = _interval(reps, 0.95, q)
    lo90, hi90 = _interval(reps, 0.90, q)
    se = float(np.nanstd(reps, ddof=1)) if q >= 2 else nan
    return PairedEffect(
        mean_diff=float(d.mean()),
        ci_low=lo,
        ci_high=hi,
        se=se,
        # the test's own critical values (t, n − 1 df, expanded): 2.8 x SE was 3.6 % small
        mdd=float(minimum_detectable(se, n_clusters=q)) if q >= 2 else nan,
        equivalence_bound=float(equivalence_bound(lo90, hi90)),
        n=int(d.size),
        n_clusters=q,
    )


def cluster_slope(
    cluster: ArrayLike,
    x: ArrayLike,
    y: ArrayLike,
    *,
    n_boot: int = DEFAULT_RUBRIC_BOOTSTRAP,
    seed: Seed = None,
) -> ClusterMean:
    """Least-squares slope of ``y`` on ``x`` with an instance-cluster interval.

    Every replicate's slope follows from weighted per-instance sums
    (``n, Σx, Σy, Σx², Σxy``), so no replicate is materialised. ``n`` of the result counts
    rows.
    """
    (xv, yv), codes, q = _finite_rows(cluster, x, y)
    nan = float("nan")
    if xv.size < 2 or np.ptp(xv) == 0:
        return ClusterMean(nan, nan, nan, nan, int(xv.size), q)
    xc = xv - xv.mean()  # centring removes the cancellation in Σx² − (Σx)²/n
    per = _per_cluster(codes, q, [np.ones_like(xc), xc, yv, xc * xc, xc * yv])
    s = cluster_bootstrap_sums(per, n_boot=n_boot, seed=as_generator(seed))
    with np.errstate(invalid="ignore", divide="ignore"):
        sxx = s[:, 3] - s[:, 1] ** 2 / s[:, 0]
        sxy = s[:, 4] - s[:, 1] * s[:, 2] / s[:, 0]
        reps = np.where(sxx > 0, sxy / sxx, np.nan)
    slope = float(np.sum(xc * (yv - yv.mean())) / np.sum(xc * xc))
    lo, hi = _interval(reps, 0.95, q)
    se = float(np.nanstd(reps, ddof=1)) if q >= 2 else nan
    return ClusterMean(slope, lo, hi, se, int(xv.size), q)


@dataclass(frozen=True)
class Correlation:
    """Pearson and Spearman correlation of paired values with cluster-bootstrap intervals."""

    pearson: float
    pearson_ci_low: float
    pearson_ci_high: float
    spearman: float
    spearman_ci_low: float
    spearman_ci_high: float
    n: int
    n_clusters: int


def _rows_pearson(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """Pearson r of each row pair of ``(B, n)`` matrices (NaN for a constant row)."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r: NDArray[np.float64] = (xc * yc).sum(axis=1) / np.sqrt(
            (xc * xc).sum(axis=1) * (yc * yc).sum(axis=1)
        )
    return r


def cluster_correlation(
    cluster: ArrayLike,
    x: ArrayLike,
    y: ArrayLike,
    *,
    n_boot: int = DEFAULT_RUBRIC_BOOTSTRAP,
    seed: Seed = None,
) -> Correlation:
    """Pearson and Spearman r of ``(x, y)`` pairs, resampling clusters for the intervals.

    Spearman's ranks are recomputed inside every replicate (ties get average ranks), so
    its interval is a real bootstrap of the rank correlation rather than of fixed ranks.
    """
    (xv, yv), codes, q = _finite_rows(cluster, x, y)
    nan = float("nan")
    if xv.size < 3 or np.ptp(xv) == 0 or np.ptp(yv) == 0:
        return Correlation(nan, nan, nan, nan, nan, nan, int(xv.size), q)
    pearson = float(stats.pearsonr(xv, yv)[0])
    spearman = float(stats.spearmanr(xv, yv)[0])
    rng = as_generator(seed)
    members = [np.flatnonzero(codes == c) for c in range(q)]
    p_reps = np.full(n_boot, np.nan)
    s_reps = np.full(n_boot, np.nan)
    chunk = 64
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        draws = rng.integers(0, q, size=(size, q))
        # clusters may differ in size, so each replicate's rows are gathered one by one
        rows = [np.concatenate([members[c] for c in d]) for d in draws]
        for b, idx in enumerate(rows):
            xb = xv[idx][None, :]
            yb = yv[idx][None, :]
            p_reps[start + b] = _rows_pearson(xb, yb)[0]
            s_reps[start + b] = _rows_pearson(
                stats.rankdata(xb, axis=1), stats.rankdata(yb, axis=1)
            )[0]
    plo, phi = _interval(p_reps, 0.95, q)
    slo, shi = _interval(s_reps, 0.95, q)
    return Correlation(pearson, plo, phi, spearman, slo, shi, int(xv.size), q)
