"""Paired comparison of two runs on the items they share (issue #21).

Two runs of one instrument that answered the same items are *paired*: an item's difficulty
is common to both runs and cancels in the per-item difference, so a paired test has more
power than an unpaired one whenever items are correlated across runs (the usual case: an
item one model finds hard the other finds hard too). Everything here takes arrays aligned
on the shared items (row ``q`` of run A and row ``q`` of run B are the same item).

* :func:`paired_ratio_difference` — the difference ``R_B − R_A`` of two ratio statistics
  ``R = Σ num / Σ den`` (a rate, a share, a mean score), each recomputed on every replicate
  of an item-cluster bootstrap that draws the *same* items for both runs. Several
  statistics (columns) share one stream of replicates.
* :func:`paired_drel_difference` — the same for reasoning drift's ``d_rel`` per condition
  and metric, from the two runs' per-question sufficient statistics.
* :func:`wald_difference` — the same for statistics of a joint fit of both runs (source
  odds ratios), from the cluster-robust SE of the difference.
* :func:`mcnemar_exact` — the exact McNemar test of paired binary outcomes, with the mid-p
  (less conservative when discordant pairs are few).
* :func:`wilcoxon_paired` / :func:`sign_test` — the ordinal paired tests (scipy wrappers).
* :func:`tost_from_replicates` — two one-sided tests of equivalence at a margin.
* :func:`ranking_letters` — a tie-aware ranking of several runs: compact letters from
  pairwise (BH-adjusted) paired p-values, runs that cannot be separated share a letter.

Intervals and p-values are those of :mod:`driftlens_core.bootstrap`: Hesterberg's expanded
percentile interval with the number of items as ``n`` and the p-value that inverts it. The
MDD at the comparison's ``n`` uses the critical values of that very test
(:func:`driftlens_core.calibration.mdd_factor`), and the TOST at margin ``m`` reads the same
replicates: the two one-sided p-values at ``−m`` and ``+m``, so "equivalent at α" is the
statement that the ``1 − 2α`` expanded interval lies inside ``(−m, m)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from driftlens_core.bootstrap import (
    DEFAULT_CHUNK,
    QuestionSums,
    Seed,
    _drel_from_sums,
    _drel_rows,
    _intervals_rows,
    _p_rows,
    as_generator,
    cluster_bootstrap_sums,
)
from driftlens_core.calibration import mdd_factor
from driftlens_core.effects import bh_adjust, compact_letter_display

#: How every interval of a paired comparison is computed, as outputs name it.
PAIRED_METHOD = "paired item-cluster bootstrap, expanded percentile interval (Hesterberg)"
DEFAULT_PAIRED_BOOTSTRAP = 2_000


@dataclass(frozen=True)
class PairedDifference:
    """``B − A`` for ``K`` statistics of two paired runs; every array is ``(K,)``.

    Attributes:
        value_a, value_b: the statistic of each run on the shared items.
        diff: ``value_b − value_a``.
        ci_low, ci_high: the ``level`` interval of the difference.
        ci90_low, ci90_high: the 90 % interval (the TOST reading at α = 0.05).
        se: bootstrap SE of the difference.
        p_value: two-sided bootstrap p-value of "no difference" (inverts the interval).
        mdd: minimum detectable difference at this ``n`` (80 % power, two-sided α).
        tost_p: TOST p-value at ``margin`` (NaN without a margin).
        margin: the equivalence margin used (NaN without one).
        n_clusters: items informing each statistic (both runs have rows).
        valid_fraction: share of replicates in which the difference is defined.
        n_boot: replicates drawn.
    """

    value_a: NDArray[np.float64]
    value_b: NDArray[np.float64]
    diff: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    ci90_low: NDArray[np.float64]
    ci90_high: NDArray[np.float64]
    se: NDArray[np.float64]
    p_value: NDArray[np.float64]
    mdd: NDArray[np.float64]
    tost_p: NDArray[np.float64]
    margin: NDArray[np.float64]
    n_clusters: NDArray[np.int64]
    valid_fraction: NDArray[np.float64]
    n_boot: int

    def equivalent(self, alpha: float = 0.05) -> NDArray[np.bool_]:
        """Where the TOST shows the difference inside ``±margin`` at level ``alpha``."""
        with np.errstate(invalid="ignore"):
            return np.asarray(self.tost_p < alpha, dtype=bool)

    def different(self, alpha: float = 0.05) -> NDArray[np.bool_]:
        """Where the bootstrap test rejects "no difference" at ``alpha`` (unadjusted)."""
        with np.errstate(invalid="ignore"):
            return np.asarray(self.p_value < alpha, dtype=bool)


def _as_columns(x: ArrayLike, name: str) -> NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"{name} must be (items,) or (items, statistics)")
    return a


def tost_from_replicates(
    rows: NDArray[np.float64],
    estimate: NDArray[np.float64],
    margin: ArrayLike,
    n_clusters: ArrayLike | None,
) -> NDArray[np.float64]:
    """TOST p-value per row of ``(K, B)`` replicates at ``±margin``.

    The one-sided p-value of ``H0: δ ≤ −m`` is half the two-sided bootstrap p-value at
    ``−m`` when the estimate lies above ``−m`` (one minus that half otherwise), likewise at
    ``+m``; the TOST p-value is the larger of the two. It is below α exactly when the
    ``1 − 2α`` expanded interval lies inside ``(−m, m)`` (up to quantile interpolation).

    Args:
        rows: ``(K, B)`` replicates of the differences (NaN ignored).
        estimate: ``(K,)`` point estimates.
        margin: ``()`` or ``(K,)`` positive margins (NaN: no test, NaN out).
        n_clusters: items informing each row (``None``: plain percentile).
    """
    k = rows.shape[0]
    m = np.broadcast_to(np.asarray(margin, dtype=np.float64), (k,))
    out = np.full(k, np.nan)
    n = None if n_clusters is None else np.broadcast_to(np.asarray(n_clusters, float), (k,))
    for j in np.flatnonzero(np.isfinite(m) & (m > 0) & np.isfinite(estimate)):
        nj = None if n is None else n[j : j + 1]
        row = rows[j : j + 1]
        p_lo2 = float(_p_rows(row, -m[j], nj)[0])
        p_hi2 = float(_p_rows(row, m[j], nj)[0])
        p_lo = p_lo2 / 2.0 if estimate[j] > -m[j] else 1.0 - p_lo2 / 2.0
        p_hi = p_hi2 / 2.0 if estimate[j] < m[j] else 1.0 - p_hi2 / 2.0
        out[j] = max(p_lo, p_hi)
    return out


def _summarise(
    point_a: NDArray[np.float64],
    point_b: NDArray[np.float64],
    rows: NDArray[np.float64],
    n_inf: NDArray[np.float64],
    *,
    level: float,
    margin: ArrayLike | str | None,
    alpha: float,
    power: float,
    n_boot: int,
) -> PairedDifference:
    """Intervals, p-values, SE, MDD and TOST of ``(K, B)`` difference replicates."""
    k = rows.shape[0]
    finite = np.isfinite(rows)
    rows = np.where(finite, rows, np.nan)
    (lo, hi), (lo90, hi90) = _intervals_rows(rows, (level, 0.90), n_inf)
    p = _p_rows(rows, 0.0, n_inf)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        # a statistic with fewer than two defined replicates has no SE: NaN, silently
        warnings.simplefilter("ignore", RuntimeWarning)
        se = np.nanstd(rows, axis=1, ddof=1) if n_boot > 1 else np.full(k, np.nan)
    diff = point_b - point_a
    mdd = mdd_factor(n_inf, alpha=alpha, power=power) * se
    m: NDArray[np.float64] = np.full(k, np.nan)
    if isinstance(margin, str):
        if margin != "mdd":
            raise ValueError("margin must be a number, an array or 'mdd'")
        m[:] = mdd  # equivalence within what this comparison could detect
    elif margin is not None:
        m[:] = np.broadcast_to(np.asarray(margin, dtype=np.float64), (k,))
    tost = tost_from_replicates(rows, diff, m, n_inf)
    undefined = n_inf < 2
    for arr in (lo, hi, lo90, hi90, p, se, mdd, tost):
        arr[undefined] = np.nan
    return PairedDifference(
        value_a=point_a,
        value_b=point_b,
        diff=diff,
        ci_low=lo,
        ci_high=hi,
        ci90_low=lo90,
        ci90_high=hi90,
        se=se,
        p_value=p,
        mdd=mdd,
        tost_p=tost,
        margin=m,
        n_clusters=n_inf.astype(np.int64),
        valid_fraction=finite.sum(axis=1) / max(n_boot, 1),
        n_boot=n_boot,
    )


def _ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def paired_ratio_difference(
    num_a: ArrayLike,
    den_a: ArrayLike,
    num_b: ArrayLike,
    den_b: ArrayLike,
    *,
    n_boot: int = DEFAULT_PAIRED_BOOTSTRAP,
    seed: Seed = None,
    level: float = 0.95,
    margin: ArrayLike | str | None = None,
    alpha: float = 0.05,
    power: float = 0.80,
    chunk: int = DEFAULT_CHUNK,
) -> PairedDifference:
    """Difference of two ratio statistics ``Σnum/Σden`` of paired runs, item-cluster bootstrap.

    Row ``q`` of every array is item ``q`` (the cluster); column ``k`` is statistic ``k``
    (a rate per tendency, a mean score per dimension, …). A rate is ``num`` = successes and
    ``den`` = trials; a mean is ``num`` = sum of values, ``den`` = count. Only items with
    rows in *both* runs for a statistic inform it (``den_a > 0`` and ``den_b > 0``): the
    comparison is on shared items, so an item missing from one run cannot shift the other
    run's value. Every replicate draws items with replacement once, and both runs' ratios
    are recomputed on that same draw, which carries the correlation between the runs.

    Args:
        num_a, den_a, num_b, den_b: ``(Q,)`` or ``(Q, K)`` per-item sums.
        n_boot: bootstrap replicates.
        seed: seed or ``Generator`` (consumed in place).
        level: confidence level of the main interval (a 90 % interval is always added).
        margin: equivalence margin(s) for the TOST (``()`` or ``(K,)``; ``"mdd"``: each
            statistic's own MDD; ``None``: no TOST).
        alpha: two-sided level of the MDD's test.
        power: power at the MDD.
        chunk: replicates per chunk (part of the random stream).

    Returns:
        A :class:`PairedDifference` with ``(K,)`` arrays.
    """
    na, da = _as_columns(num_a, "num_a"), _as_columns(den_a, "den_a")
    nb, db = _as_columns(num_b, "num_b"), _as_columns(den_b, "den_b")
    if not (na.shape == da.shape == nb.shape == db.shape):
        raise ValueError("num_a, den_a, num_b and den_b must have the same shape")
    if na.shape[0] == 0:
        raise ValueError("a paired comparison needs at least one shared item")
    both = (da > 0) & (db > 0)
    na, da, nb, db = (np.where(both, x, 0.0) for x in (na, da, nb, db))
    k = na.shape[1]
    point_a = _ratio(na.sum(axis=0), da.sum(axis=0))
    point_b = _ratio(nb.sum(axis=0), db.sum(axis=0))
    cols = np.concatenate([na, da, nb, db], axis=1)
    sums = cluster_bootstrap_sums(cols, n_boot=n_boot, seed=as_generator(seed), chunk=chunk).T
    ra = _ratio(sums[:k], sums[k : 2 * k])
    rb = _ratio(sums[2 * k : 3 * k], sums[3 * k :])
    rows = np.ascontiguousarray(rb - ra)
    n_inf = both.sum(axis=0).astype(np.float64)
    return _summarise(
        point_a,
        point_b,
        rows,
        n_inf,
        level=level,
        margin=margin,
        alpha=alpha,
        power=power,
        n_boot=n_boot,
    )


def paired_drel_difference(
    qs_a: QuestionSums,
    qs_b: QuestionSums,
    *,
    n_boot: int = DEFAULT_PAIRED_BOOTSTRAP,
    seed: Seed = None,
    level: float = 0.95,
    margin: ArrayLike | str | None = None,
    alpha: float = 0.05,
    power: float = 0.80,
    chunk: int = DEFAULT_CHUNK,
) -> PairedDifference:
    """``d_rel(B) − d_rel(A)`` per condition and metric, on the questions both runs share.

    Both runs' sufficient statistics must be aligned on the same questions (row ``q`` is
    the same question) and conditions. A replicate draws questions once; each run's noise
    floor, noise SD and condition means are re-estimated on that draw, so the difference
    carries both floors' uncertainty and the question-level correlation between the runs.

    Returns:
        A :class:`PairedDifference` with ``(C·M,)`` arrays, condition-major (reshape to
        ``(C, M)``); ``n_clusters`` counts questions with rows of the condition and of the
        noise floor in both runs.
    """
    if qs_a.n.shape != qs_b.n.shape or qs_a.sums.shape != qs_b.sums.shape:
        raise ValueError("both runs' sums must cover the same questions, conditions and metrics")
    ca, cb = qs_a.columns(), qs_b.columns()
    ka = ca.shape[1]
    d0a = _drel_from_sums(qs_a, ca.sum(axis=0))[0].ravel()
    d0b = _drel_from_sums(qs_b, cb.sum(axis=0))[0].ravel()
    sums = cluster_bootstrap_sums(
        np.concatenate([ca, cb], axis=1), n_boot=n_boot, seed=as_generator(seed), chunk=chunk
    )
    by_col = np.ascontiguousarray(sums.T)
    da, _ = _drel_rows(qs_a, by_col[:ka])
    db, _ = _drel_rows(qs_b, by_col[ka:])
    rows = np.ascontiguousarray(db - da)
    m = qs_a.n_metrics

    def informing(qs: QuestionSums) -> NDArray[np.bool_]:
        has_noise = qs.n[:, qs.noise].sum(axis=1) > 0
        return np.asarray((qs.n > 0) & has_noise[:, None], dtype=bool)  # (Q, C)

    n_inf = np.repeat((informing(qs_a) & informing(qs_b)).sum(axis=0), m).astype(np.float64)
    return _summarise(
        d0a, d0b, rows, n_inf, level=level, margin=margin, alpha=alpha, power=power, n_boot=n_boot
    )


def wald_difference(
    value_a: ArrayLike,
    value_b: ArrayLike,
    se_diff: ArrayLike,
    n_clusters: ArrayLike,
    *,
    level: float = 0.95,
    margin: ArrayLike | str | None = None,
    alpha: float = 0.05,
    power: float = 0.80,
) -> PairedDifference:
    """``B − A`` from a joint fit's estimates and the cluster-robust SE of the difference.

    For statistics a bootstrap would have to refit per replicate (a logistic regression's
    odds ratios), both runs are fitted jointly with item clusters shared by the runs, so the
    robust covariance carries the pairing. The interval and p-value use ``t`` with
    ``n_clusters − 1`` degrees of freedom; the MDD is ``(t₁₋α/₂ + t_power) · SE``; the TOST
    p-value is the larger of the two one-sided ``t`` tests at ``±margin``.

    Args:
        value_a, value_b: ``(K,)`` the statistic of each run (e.g. log odds ratios).
        se_diff: ``(K,)`` SE of ``value_b − value_a``.
        n_clusters: ``()`` or ``(K,)`` clusters (items) informing the fit.
        level: confidence level of the main interval (a 90 % one is always added).
        margin: TOST margin(s), ``"mdd"`` for each row's MDD, or ``None``.
        alpha: two-sided level of the MDD's test.
        power: power at the MDD.
    """
    a = np.atleast_1d(np.asarray(value_a, dtype=np.float64))
    b = np.atleast_1d(np.asarray(value_b, dtype=np.float64))
    se = np.atleast_1d(np.asarray(se_diff, dtype=np.float64))
    k = a.size
    n = np.broadcast_to(np.asarray(n_clusters, dtype=np.float64), (k,)).copy()
    df = np.maximum(n - 1.0, 1.0)
    diff = b - a
    t_main = stats.t.ppf(0.5 + level / 2.0, df)
    t90 = stats.t.ppf(0.95, df)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * stats.t.sf(np.abs(diff) / se, df)
        mdd = (stats.t.ppf(1 - alpha / 2.0, df) + stats.t.ppf(power, df)) * se
    m: NDArray[np.float64] = np.full(k, np.nan)
    if isinstance(margin, str):
        m[:] = mdd
    elif margin is not None:
        m[:] = np.broadcast_to(np.asarray(margin, dtype=np.float64), (k,))
    with np.errstate(invalid="ignore", divide="ignore"):
        tost = np.maximum(stats.t.sf((diff + m) / se, df), stats.t.sf((m - diff) / se, df))
    out = [diff - t_main * se, diff + t_main * se, diff - t90 * se, diff + t90 * se, se, p, mdd,
           tost]  # fmt: skip
    undefined = ~np.isfinite(se) | (se <= 0) | (n < 2)
    for arr in out:
        arr[undefined] = np.nan
    lo, hi, lo90, hi90, se, p, mdd, tost = out
    return PairedDifference(
        value_a=a, value_b=b, diff=diff, ci_low=lo, ci_high=hi, ci90_low=lo90, ci90_high=hi90,
        se=se, p_value=p, mdd=mdd, tost_p=tost, margin=m, n_clusters=n.astype(np.int64),
        valid_fraction=np.ones(k), n_boot=0,
    )  # fmt: skip


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test of paired binary outcomes.

    Attributes:
        n01: pairs with A = 0 and B = 1.
        n10: pairs with A = 1 and B = 0.
        p_exact: two-sided exact p (binomial on the discordant pairs, as statsmodels'
            ``mcnemar(exact=True)``).
        p_mid: the mid-p: ``p_exact`` minus the probability of the observed count
            (Fagerland, Lydersen & Laake 2013), less conservative with few discordant pairs.
    """

    n01: int
    n10: int
    p_exact: float
    p_mid: float

    @property
    def discordant(self) -> int:
        """Pairs on which the runs disagree."""
        return self.n01 + self.n10


def mcnemar_exact(n01: int, n10: int) -> McNemar:
    """Exact and mid-p McNemar test from the two discordant counts.

    Args:
        n01: pairs where A fails and B succeeds.
        n10: pairs where A succeeds and B fails.
    """
    if n01 < 0 or n10 < 0:
        raise ValueError("discordant counts cannot be negative")
    n = n01 + n10
    if n == 0:
        return McNemar(int(n01), int(n10), 1.0, 1.0)
    low = min(n01, n10)
    p = min(1.0, 2.0 * float(stats.binom.cdf(low, n, 0.5)))
    if n01 == n10:
        # the observed count is the centre: mid-p subtracts half its probability mass once
        mid = 1.0 - 0.5 * float(stats.binom.pmf(low, n, 0.5))
    else:
        mid = p - float(stats.binom.pmf(low, n, 0.5))
    return McNemar(int(n01), int(n10), p, min(1.0, mid))


def mcnemar_pairs(a: ArrayLike, b: ArrayLike) -> McNemar:
    """:func:`mcnemar_exact` from paired 0/1 outcomes (NaN pairs left out)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError("a and b must pair one to one")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok] > 0.5, y[ok] > 0.5
    return mcnemar_exact(int(np.sum(~x & y)), int(np.sum(x & ~y)))


@dataclass(frozen=True)
class OrdinalTest:
    """A paired ordinal test on per-item differences.

    Attributes:
        statistic: the test statistic (Wilcoxon's ``W`` or the count of positive signs).
        p_value: two-sided p-value.
        n_nonzero: items with a non-zero difference (ties at zero carry no sign).
        method: ``"wilcoxon"`` or ``"sign"`` (with scipy's method detail for Wilcoxon).
    """

    statistic: float
    p_value: float
    n_nonzero: int
    method: str


def wilcoxon_paired(d: ArrayLike) -> OrdinalTest:
    """Wilcoxon signed-rank test of per-item differences ``B − A`` (zeros dropped).

    The exact null distribution is used for up to 50 non-zero differences without ties, the
    normal approximation (with tie correction) otherwise. scipy's own ``"auto"`` falls back
    to a permutation test on tied data, which took ~5 s per call on 20 tied differences.
    """
    x = np.asarray(d, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    nz = int(np.count_nonzero(x))
    if nz == 0:
        return OrdinalTest(0.0, 1.0, 0, "wilcoxon")
    x = x[x != 0]
    exact = nz <= 50 and np.unique(np.abs(x)).size == nz
    method = "exact" if exact else "approx"
    res = stats.wilcoxon(x, zero_method="wilcox", method=method)
    return OrdinalTest(float(res.statistic), float(res.pvalue), nz, f"wilcoxon ({method})")


def sign_test(d: ArrayLike) -> OrdinalTest:
    """Exact sign test of per-item differences ``B − A`` (zeros dropped)."""
    x = np.asarray(d, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    pos = int(np.sum(x > 0))
    nz = pos + int(np.sum(x < 0))
    if nz == 0:
        return OrdinalTest(0.0, 1.0, 0, "sign")
    p = float(stats.binomtest(pos, nz, 0.5).pvalue)
    return OrdinalTest(float(pos), p, nz, "sign")


def cluster_means(
    cluster: ArrayLike, values: ArrayLike
) -> tuple[NDArray[Any], NDArray[np.float64]]:
    """Mean of ``values`` per cluster (NaN left out): ``(cluster ids, means)``."""
    v = np.asarray(values, dtype=np.float64).ravel()
    c = np.asarray(cluster).ravel()
    ok = np.isfinite(v)
    ids, inv = np.unique(c[ok], return_inverse=True)
    sums = np.bincount(inv, weights=v[ok], minlength=ids.size)
    counts = np.bincount(inv, minlength=ids.size)
    return ids, sums / np.maximum(counts, 1)


@dataclass(frozen=True)
class Ranking:
    """Tie-aware ranking of several runs.

    Attributes:
        order: run indices from highest to lowest value.
        letters: compact letters per run (original order); runs sharing a letter are not
            separable at ``alpha`` after BH over all pairs.
        p_adjusted: ``(R, R)`` BH-adjusted pairwise p-values (NaN on the diagonal).
    """

    order: tuple[int, ...]
    letters: tuple[str, ...]
    p_adjusted: NDArray[np.float64]


def ranking_letters(
    values: ArrayLike,
    pair_p: ArrayLike,
    *,
    alpha: float = 0.05,
    descending: bool = True,
    adjusted: bool = False,
) -> Ranking:
    """Compact letters from pairwise paired p-values, BH-adjusted over all pairs.

    Args:
        values: ``(R,)`` each run's statistic (sets the display order).
        pair_p: ``(R, R)`` symmetric p-values of the pairwise paired tests (the diagonal
            is ignored; NaN pairs count as not separable): unadjusted, or already adjusted
            within a larger family when ``adjusted``.
        alpha: level at which an adjusted p-value separates two runs.
        descending: rank the highest value first (``"a"``).
        adjusted: ``pair_p`` is already BH-adjusted (e.g. over every row of a comparison
            table, so letters and table read one family); it is used as it is.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    p = np.asarray(pair_p, dtype=np.float64)
    r = v.size
    if p.shape != (r, r):
        raise ValueError("pair_p must be a (runs x runs) matrix")
    iu = np.triu_indices(r, 1)
    adj = np.full((r, r), np.nan)
    upper = p[iu] if adjusted else bh_adjust(p[iu])
    adj[iu] = upper
    adj[(iu[1], iu[0])] = upper
    key = np.where(np.isfinite(v), -v if descending else v, np.inf)
    order = tuple(int(i) for i in np.argsort(key, kind="stable"))
    different = np.nan_to_num(adj, nan=1.0) < alpha
    np.fill_diagonal(different, False)
    return Ranking(order, compact_letter_display(different, order), adj)


def family_adjust(p_values: Sequence[float] | ArrayLike) -> NDArray[np.float64]:
    """Benjamini–Hochberg over one family of comparisons (NaN entries stay out)."""
    return bh_adjust(np.asarray(p_values, dtype=np.float64))
