"""Cluster bootstrap over questions for the standardised drift effect ``d_rel``.

The estimand (SPEC §7) for condition ``c`` and metric ``m`` is

    d_rel = (μ_c − μ_noise) / σ_noise

where μ_noise and σ_noise are the mean and standard deviation of the drift rows of the
pragmatic-noise conditions, pooled over all noise conditions. The question (stem) is the
independent unit: a replicate draws ``Q`` questions with replacement and keeps *every* row
of a drawn question, so the within-question correlation of rows (and the correlation between
the treated rows and the noise rows of the same question) is carried into the replicate.
μ_noise and σ_noise are re-estimated in every replicate, so the uncertainty of the floor is
part of the interval.

Sufficient statistics
---------------------
A replicate is fully described by the multiplicities ``w_q`` (how often question ``q`` was
drawn). Any row-level mean or variance of the resampled table is then a function of weighted
per-question sums: with ``n_qc`` rows, ``Σx`` and ``Σx²`` of question ``q`` in condition ``c``,

    μ*_c      = Σ_q w_q Σx_qc / Σ_q w_q n_qc
    μ*_noise  = Σ_q w_q Σx_qN / N*,          N* = Σ_q w_q n_qN   (N = all noise conditions)
    σ*²_noise = (Σ_q w_q Σx²_qN − N* μ*²_noise) / (N* − 1)

which is exactly ``np.var(ddof=1)`` of the materialised resampled noise rows (each row of a
question drawn twice counts twice, as it would in the row-level bootstrap). The ``ddof=1``
is on rows because σ_noise describes the spread of single drift rows, the scale on which
d_rel is read. A replicate therefore costs O(questions x columns), not O(rows): the weighted
sums of all replicates are one matrix product ``counts (B x Q) @ stats (Q x K)``.
Values are shifted by the pooled noise mean before the squares are summed; d_rel is shift
invariant and the shift removes the cancellation in ``Σx² − N μ²``.

Randomness and the two implementations
--------------------------------------
Indices are drawn with ``numpy.random.Generator.integers`` in chunks of ``chunk`` replicates
(``uint16`` when there are at most 65,535 questions, ``uint32`` otherwise; 16-bit draws are
the cheapest bounded draws numpy offers). Both implementations consume exactly the same
stream; they differ only in how a chunk of indices becomes multiplicities: ``np.bincount``
here, a one-pass Cython loop in ``_bootstrap.pyx`` (:func:`_counts_numpy` is the reference).
The multiplicities are integers stored as float64, so both paths give bit-identical sums.

Measured on the 2-core reference machine (400 questions, 12 conditions, 2 metrics,
B = 10,000; bench/stats.py): drawing the indices ~7 ms (the bit generator's cost: raw words
are no faster), counting 2 ms compiled vs ~9 ms with bincount, the products ~4 ms, the
post-processing (ratios, intervals, p-values, SDs over replicates) ~9 ms: 22 ms in all, 29 ms
for the numpy twin. Two alternatives lost: a Cython kernel that also accumulates
(``acc[k] += w · stats[q, k]``, no count matrix) ran ~3x slower than BLAS (the scalar
inner loop does not vectorise across the aliasing pointers), and large chunks let OpenBLAS
start its second thread, which on a busy machine spin-waits: with other jobs running, the
median for chunks of 512 replicates was 54-88 ms against 27-33 ms for chunks of 64 (small
products stay single-threaded). Hence ``chunk = 64``, which also bounds the count matrix
to 64 x Q. Columns that are the same for every question (the row counts of a balanced
design) skip the product: their weighted sum is always Q times the value.

p-values and intervals
----------------------
The plain percentile interval (2.5% and 97.5% quantiles of the replicates) is too narrow
with few clusters: the bootstrap variance of a mean over ``n`` resampled clusters is
``(n − 1)/n`` times the unbiased one and the normal quantile ignores that the scale is
estimated. In our simulations (bench/calibration.py) it covered d_rel in ~93% of studies
with 30 questions. We therefore use Hesterberg's *expanded percentile interval*
(Hesterberg 2015, "What teachers should know about the bootstrap"): the quantile levels
``α/2`` are replaced by

    α'/2 = Φ(−sqrt(n / (n − 1)) · t_{1−α/2, n−1})

with ``n`` the number of questions that inform the condition (those with rows of the
condition, at most those with noise rows). For n = 30 this reads the 1.9% and 98.1%
quantiles; for n = 400 it is within 0.05 percentage points of the plain interval.

The two-sided p-value inverts exactly this interval. With the one-sided tail share
(with the usual +1 so p is never 0: the observed sample counts as one replicate)

    F = min(1 + #{d* ≤ 0}, 1 + #{d* ≥ 0}) / (B + 1)

p is the smallest α whose expanded interval excludes 0:

    p = min(1, 2 · T_{n−1}.sf( Φ⁻¹(1 − F) / sqrt(n / (n − 1)) ))

so ``p < α`` exactly when 0 lies outside the (1 − α) interval (up to quantile
interpolation). The count resolves tail shares down to ~1/B only, and after the expansion
that floor is too coarse for the p < 0.001 of the sensitivity check (with 30 questions and
B = 10,000 the smallest expanded p would be ≈ 0.002 however large the effect). When fewer
than 10 replicates lie beyond 0, F is therefore extrapolated with a normal fit to the
bootstrap distribution, ``F = min(count-based F, Φ(−|mean(d*)| / sd(d*)))``. This never
touches p-values near 0.05 (which need hundreds of replicates in the tail), so the
interval/p-value consistency and the false-positive rate are unaffected. Without ``n``
(``n_clusters=None``) both reduce to the plain percentile
interval and ``p = min(1, 2F)``. Replicates in which the statistic is undefined
(σ*_noise = 0, or a condition absent from every drawn question) are dropped and their share
is reported as ``valid_fraction``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from driftlens_core._impl import compiled_module

Seed = int | np.random.Generator | None

DEFAULT_BOOTSTRAP = 10_000
#: Fewer replicates than this are refused by the front ends: the tails hold a handful of
#: replicates and a "95 % CI" can exclude its own estimate.
MIN_BOOTSTRAP = 200
#: Below this every output carries a flag: p-values resolve only to ~2/(B+1) and interval
#: ends move between runs; the sensitivity check's p < 0.001 needs at least this many.
RECOMMENDED_BOOTSTRAP = 2_000


def bootstrap_flags(n_boot: int) -> tuple[str, ...]:
    """The flag every output carries when ``n_boot`` is below :data:`RECOMMENDED_BOOTSTRAP`."""
    if n_boot >= RECOMMENDED_BOOTSTRAP:
        return ()
    return (
        f"only B = {n_boot} bootstrap replicates (fewer than {RECOMMENDED_BOOTSTRAP:,}): "
        "p-values and interval ends are coarse",
    )


# below this many replicates beyond the null the tail share is extrapolated (see docstring)
_TAIL_MIN_COUNT = 10
DEFAULT_CHUNK = 64


def as_generator(seed: Seed) -> np.random.Generator:
    """Return ``seed`` if it is a Generator, else ``numpy.random.default_rng(seed)``."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def _index_dtype(n_clusters: int) -> type[np.unsignedinteger]:
    return np.uint16 if n_clusters <= np.iinfo(np.uint16).max else np.uint32


def _draw_chunks(
    n_clusters: int, n_boot: int, rng: np.random.Generator, chunk: int
) -> Iterator[NDArray[np.unsignedinteger]]:
    """Yield index matrices (``≤ chunk`` replicates x ``n_clusters`` draws) from ``rng``."""
    dtype = _index_dtype(n_clusters)
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        yield rng.integers(0, n_clusters, size=(size, n_clusters), dtype=dtype)


def _counts_numpy(idx: NDArray[np.unsignedinteger], n_clusters: int) -> NDArray[np.float64]:
    """Multiplicities of each cluster per replicate (pure-numpy reference).

    Args:
        idx: ``(replicates, draws)`` cluster indices in ``[0, n_clusters)``.
        n_clusters: number of clusters (questions).

    Returns:
        ``(replicates, n_clusters)`` float64 counts; row ``b`` sums to ``draws``.
    """
    n_rep = idx.shape[0]
    flat = idx.astype(np.int64) + (np.arange(n_rep, dtype=np.int64) * n_clusters)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_rep * n_clusters)
    return counts.reshape(n_rep, n_clusters).astype(np.float64)


def _counts(
    idx: NDArray[np.unsignedinteger], n_clusters: int, buf: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Multiplicities of one chunk, compiled kernel or numpy twin (``buf``: reusable output)."""
    mod = compiled_module("_bootstrap")
    if mod is None:
        return _counts_numpy(idx, n_clusters)
    out = buf[: idx.shape[0]]
    kernel = mod.counts_u16 if idx.dtype == np.uint16 else mod.counts_u32
    kernel(idx, out)
    return out


def cluster_bootstrap_sums(
    stats: ArrayLike,
    *,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: Seed = None,
    chunk: int = DEFAULT_CHUNK,
) -> NDArray[np.float64]:
    """Weighted column sums of per-cluster statistics for every bootstrap replicate.

    Replicate ``b`` draws ``Q`` clusters with replacement (multiplicities ``w_bq``) and
    returns ``Σ_q w_bq · stats[q, :]``. Put per-question sufficient statistics (row counts,
    sums, sums of squares) in the columns and every resampled mean or variance follows.

    Args:
        stats: ``(Q, K)`` per-cluster statistics.
        n_boot: number of replicates ``B``.
        seed: integer seed or ``numpy.random.Generator`` (consumed in place).
        chunk: replicates drawn and counted at a time (memory ``chunk x Q`` float64).
            The chunk size is part of the random stream: keep it fixed to reproduce.

    Returns:
        ``(B, K)`` float64 array of weighted sums.
    """
    a = np.ascontiguousarray(np.asarray(stats, dtype=np.float64))
    if a.ndim != 2:
        raise ValueError("stats must be a 2-D (clusters x columns) array")
    n_clusters = a.shape[0]
    if n_clusters == 0:
        raise ValueError("the bootstrap needs at least one cluster")
    if n_boot < 1 or chunk < 1:
        raise ValueError("n_boot and chunk must be positive")
    rng = as_generator(seed)
    out = np.empty((n_boot, a.shape[1]), dtype=np.float64)
    # Columns equal for every cluster (e.g. row counts of a balanced design) need no
    # product: the multiplicities of a replicate always sum to Q, so their sum is Q·value.
    constant = np.all(a == a[0], axis=0)
    varying = np.flatnonzero(~constant)
    out[:, constant] = a[0, constant] * n_clusters
    a_var = np.ascontiguousarray(a[:, varying])
    part = np.empty((min(chunk, n_boot), varying.size), dtype=np.float64)
    buf = np.empty((min(chunk, n_boot), n_clusters), dtype=np.float64)
    start = 0
    for idx in _draw_chunks(n_clusters, n_boot, rng, chunk):
        counts = _counts(idx, n_clusters, buf)
        stop = start + idx.shape[0]
        if varying.size:
            res = part[: idx.shape[0]]
            np.matmul(counts, a_var, out=res)
            out[start:stop, varying] = res
        start = stop
    return out


def expanded_tail(alpha: float, n_clusters: ArrayLike | None) -> NDArray[np.float64]:
    """Quantile level ``α'/2`` of the expanded percentile interval (see module docstring).

    Returns ``α/2`` where ``n_clusters`` is ``None`` or below 2.
    """
    if n_clusters is None:
        return np.asarray(alpha / 2.0, dtype=np.float64)
    n = np.asarray(n_clusters, dtype=np.float64)
    out = np.full(n.shape, alpha / 2.0)
    ok = n >= 2
    if ok.any():
        from scipy import stats  # here, not at the top: see _p_rows

        nn = n[ok]
        t = stats.t.ppf(1.0 - alpha / 2.0, nn - 1.0)
        out[ok] = stats.norm.cdf(-np.sqrt(nn / (nn - 1.0)) * t)
    return out


def bootstrap_p_value(
    replicates: NDArray[np.float64],
    null: float = 0.0,
    n_clusters: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Two-sided p-value inverting the (expanded) percentile interval, per column.

    Args:
        replicates: ``(B,)`` or ``(B, K)`` bootstrap replicates (NaN ignored).
        null: value under the null hypothesis.
        n_clusters: clusters informing each column (``None``: plain percentile).
    """
    r = np.asarray(replicates, dtype=np.float64)
    if r.ndim == 1:
        r = r[:, None]
    return _p_rows(np.ascontiguousarray(r.T), null, n_clusters)


def _p_rows(
    rows: NDArray[np.float64], null: float, n_clusters: ArrayLike | None
) -> NDArray[np.float64]:
    """:func:`bootstrap_p_value` on ``(K, B)`` replicates (one statistic per row)."""
    # scipy.stats is imported where it is used: this module is imported by every CLI start
    # (study.limits reads MIN_BOOTSTRAP), and scipy.stats was a second of each `driftlens`
    # process's start that most commands (generate, import, jobs, listings) never use.
    from scipy import stats

    n = rows.shape[1] - np.isnan(rows).sum(axis=1)
    low = np.count_nonzero(rows <= null, axis=1)
    high = np.count_nonzero(rows >= null, axis=1)
    count = np.minimum(low, high)
    with np.errstate(invalid="ignore", divide="ignore"):
        tail = (count + 1.0) / (n + 1.0)
        rare = (count < _TAIL_MIN_COUNT) & (n > 1)
        if rare.any():
            # beyond the resolution of B: extrapolate the tail with a normal fit
            sub = rows[rare]
            z = np.abs(np.nanmean(sub, axis=1) - null) / np.nanstd(sub, axis=1, ddof=1)
            tail[rare] = np.minimum(tail[rare], stats.norm.sf(z))
        if n_clusters is None:
            p = np.minimum(1.0, 2.0 * tail)
        else:
            k = np.broadcast_to(np.asarray(n_clusters, dtype=np.float64), tail.shape)
            z = stats.norm.isf(np.minimum(tail, 0.5))
            p_exp = 2.0 * stats.t.sf(z / np.sqrt(k / np.maximum(k - 1.0, 1e-300)), k - 1.0)
            p = np.where(k >= 2, np.minimum(1.0, p_exp), np.minimum(1.0, 2.0 * tail))
    return np.where(n > 0, p, np.nan)


def percentile_interval(
    replicates: NDArray[np.float64],
    level: float = 0.95,
    n_clusters: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(Expanded) percentile interval per column of ``replicates`` (NaN ignored).

    Args:
        replicates: ``(B,)`` or ``(B, K)`` bootstrap replicates.
        level: confidence level.
        n_clusters: clusters informing each column; ``None`` gives the plain percentile
            interval, otherwise Hesterberg's expanded interval (module docstring).
    """
    r = np.asarray(replicates, dtype=np.float64)
    if r.ndim == 1:
        r = r[:, None]
    (bounds,) = _intervals_rows(np.ascontiguousarray(r.T), (level,), n_clusters)
    return bounds


def _row_quantiles(rows: NDArray[np.float64], probs: NDArray[np.float64]) -> NDArray[np.float64]:
    """Linear-interpolation quantiles (numpy's default) of each row, one partial sort."""
    n = rows.shape[1]
    h = (n - 1) * probs
    lo = np.floor(h).astype(np.intp)
    hi = np.minimum(lo + 1, n - 1)
    part = np.partition(rows, np.unique(np.concatenate([lo, hi])), axis=1)
    a, b = part[:, lo], part[:, hi]
    t = h - lo
    # numpy's _lerp: a + (b − a)·t, computed from the upper end when t ≥ 0.5
    out: NDArray[np.float64] = np.where(t >= 0.5, b - (b - a) * (1.0 - t), a + (b - a) * t)
    return out


def _intervals_rows(
    rows: NDArray[np.float64],
    levels: tuple[float, ...],
    n_clusters: ArrayLike | None,
) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Intervals at several levels for ``(K, B)`` replicates, one partial sort per group."""
    k = rows.shape[0]
    tails = np.stack(
        [np.broadcast_to(expanded_tail(1.0 - lv, n_clusters), (k,)) for lv in levels], axis=1
    )  # (k, L)
    probs = np.concatenate([tails, 1.0 - tails], axis=1)  # (k, 2L): lows then highs
    out = np.full((k, probs.shape[1]), np.nan)
    complete = ~np.isnan(rows).any(axis=1)
    # rows without NaN that share their quantile levels: one vectorised call
    groups: dict[tuple[float, ...], list[int]] = {}
    for j in np.flatnonzero(complete):
        groups.setdefault(tuple(probs[j]), []).append(int(j))
    for key, idx in groups.items():
        out[idx] = _row_quantiles(rows[idx], np.array(key))
    for j in np.flatnonzero(~complete):
        row = rows[j][~np.isnan(rows[j])]
        if row.size:
            out[j] = np.quantile(row, probs[j])
    n_lv = len(levels)
    return [(out[:, i], out[:, n_lv + i]) for i in range(n_lv)]


@dataclass(frozen=True)
class QuestionSums:
    """Per-question sufficient statistics of a drift table (one model).

    Attributes:
        n: ``(Q, C)`` row counts per question and condition.
        sums: ``(Q, C, M)`` sums of the (shifted) drift values per metric.
        noise_sumsq: ``(Q, M)`` sums of squared (shifted) values over noise rows.
        noise: ``(C,)`` bool, which conditions form the noise floor.
        shift: ``(M,)`` value subtracted from every drift value (the pooled noise mean).
    """

    n: NDArray[np.float64]
    sums: NDArray[np.float64]
    noise_sumsq: NDArray[np.float64]
    noise: NDArray[np.bool_]
    shift: NDArray[np.float64]

    @property
    def n_questions(self) -> int:
        return int(self.n.shape[0])

    @property
    def n_conditions(self) -> int:
        return int(self.n.shape[1])

    @property
    def n_metrics(self) -> int:
        return int(self.sums.shape[2])

    def columns(self) -> NDArray[np.float64]:
        """``(Q, K)`` matrix ``[n_c..., Σx_cm..., Σx²_noise,m...]`` for the bootstrap."""
        q = self.n_questions
        return np.concatenate([self.n, self.sums.reshape(q, -1), self.noise_sumsq], axis=1)

    def split(
        self, col: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Inverse of :meth:`columns` for ``(..., K)`` weighted sums."""
        c, m = self.n_conditions, self.n_metrics
        n = col[..., :c]
        s = col[..., c : c + c * m].reshape(*col.shape[:-1], c, m)
        ss = col[..., c + c * m :]
        return n, s, ss


def question_sums(
    question: ArrayLike,
    condition: ArrayLike,
    values: ArrayLike,
    noise: ArrayLike,
    *,
    n_questions: int | None = None,
) -> QuestionSums:
    """Reduce rows to per-question sufficient statistics.

    Args:
        question: ``(N,)`` integer question codes ``0..Q-1``.
        condition: ``(N,)`` integer condition codes ``0..C-1``.
        values: ``(N, M)`` drift values (one column per metric), finite.
        noise: ``(C,)`` bool mask of the noise conditions (at least one).
        n_questions: ``Q`` when some codes have no rows.
    """
    q = np.asarray(question, dtype=np.int64)
    c = np.asarray(condition, dtype=np.int64)
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    mask = np.asarray(noise, dtype=bool)
    if not (q.shape == c.shape == x.shape[:1]):
        raise ValueError("question, condition and values must have the same number of rows")
    if not mask.any():
        raise ValueError("at least one noise condition is needed for the floor")
    n_q = int(n_questions if n_questions is not None else (q.max() + 1 if q.size else 0))
    n_c = mask.shape[0]
    n_m = x.shape[1]
    is_noise = mask[c]
    if not is_noise.any():
        raise ValueError("no noise rows: the floor cannot be estimated")
    shift = x[is_noise].mean(axis=0)
    xs = x - shift
    cell = q * n_c + c
    n = np.bincount(cell, minlength=n_q * n_c).astype(np.float64).reshape(n_q, n_c)
    sums = np.empty((n_q, n_c, n_m))
    sumsq = np.empty((n_q, n_m))
    for j in range(n_m):
        sums[:, :, j] = np.bincount(cell, weights=xs[:, j], minlength=n_q * n_c).reshape(n_q, n_c)
        sumsq[:, j] = np.bincount(q[is_noise], weights=xs[is_noise, j] ** 2, minlength=n_q)
    return QuestionSums(n=n, sums=sums, noise_sumsq=sumsq, noise=mask, shift=shift)


def _drel_from_sums(
    qs: QuestionSums, col: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """From ``(..., K)`` weighted sums return ``d_rel, diff, μ_noise, σ_noise`` (shifted scale).

    ``d_rel`` and ``diff = μ_c − μ_noise`` have shape ``(..., C, M)``.
    """
    n, s, ss = qs.split(col)
    n_noise = n[..., qs.noise].sum(axis=-1)  # (...,)
    s_noise = s[..., qs.noise, :].sum(axis=-2)  # (..., M)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_noise = s_noise / n_noise[..., None]
        var = (ss - n_noise[..., None] * mu_noise**2) / (n_noise[..., None] - 1.0)
        sd_noise = np.sqrt(np.where(var > 0, var, np.nan))
        mu = s / n[..., None]
        diff = mu - mu_noise[..., None, :]
        d = diff / sd_noise[..., None, :]
    return d, diff, mu_noise, sd_noise


def _drel_rows(
    qs: QuestionSums, by_col: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`_drel_from_sums` for ``(K, B)`` sums: ``d_rel`` and ``diff`` as ``(C·M, B)``."""
    c, m = qs.n_conditions, qs.n_metrics
    b = by_col.shape[1]
    n = by_col[:c]  # (C, B)
    s = by_col[c : c + c * m].reshape(c, m, b)
    ss = by_col[c + c * m :]  # (M, B)
    n_noise = n[qs.noise].sum(axis=0)  # (B,)
    s_noise = s[qs.noise].sum(axis=0)  # (M, B)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_noise = s_noise / n_noise
        var = (ss - n_noise * mu_noise**2) / (n_noise - 1.0)
        sd_noise = np.sqrt(np.where(var > 0, var, np.nan))
        diff = s / n[:, None, :] - mu_noise[None]
        d = diff / sd_noise[None]
    return d.reshape(c * m, b), diff.reshape(c * m, b)


@dataclass(frozen=True)
class DrelBootstrap:
    """Point estimates and cluster-bootstrap inference for d_rel, per condition and metric.

    Arrays are ``(C, M)`` unless noted. ``diff`` is μ_c − μ_noise in drift units.
    """

    estimate: NDArray[np.float64]
    diff: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    ci90_low: NDArray[np.float64]
    ci90_high: NDArray[np.float64]
    p_value: NDArray[np.float64]
    se: NDArray[np.float64]
    diff_se: NDArray[np.float64]
    valid_fraction: NDArray[np.float64]
    noise_mean: NDArray[np.float64]  # (M,)
    noise_sd: NDArray[np.float64]  # (M,)
    n_boot: int


def drel_bootstrap(
    qs: QuestionSums,
    *,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: Seed = None,
    level: float = 0.95,
    chunk: int = DEFAULT_CHUNK,
    expand: bool = True,
) -> DrelBootstrap:
    """Cluster bootstrap of d_rel for every condition and metric (see module docstring).

    Args:
        qs: per-question sufficient statistics from :func:`question_sums`.
        n_boot: replicates ``B`` (default 10,000).
        seed: integer seed or ``numpy.random.Generator``; same seed, same result, under
            both implementations.
        level: confidence level of the main interval (a 90% interval is always added for
            the equivalence bound).
        chunk: replicates per chunk (part of the random stream).
        expand: use the expanded percentile interval and its p-value (default); ``False``
            gives the plain percentile interval (kept for the calibration comparison).

    Returns:
        A :class:`DrelBootstrap`.
    """
    cols = qs.columns()
    d0, diff0, mu0, sd0 = _drel_from_sums(qs, cols.sum(axis=0))
    sums = cluster_bootstrap_sums(cols, n_boot=n_boot, seed=seed, chunk=chunk)
    # everything below reduces along replicates: make them contiguous, one row per column
    by_col = np.ascontiguousarray(sums.T)  # (K, B)
    c, m = qs.n_conditions, qs.n_metrics
    # one statistic per row (condition-major, metric-minor), replicates contiguous
    d_rows, diff_rows = _drel_rows(qs, by_col)
    finite = np.isfinite(d_rows)
    all_finite = bool(finite.all())
    if not all_finite:
        d_rows[~finite] = np.nan
        diff_rows[~finite] = np.nan
    # questions informing each condition: with rows of it, at most those with noise rows
    n_cond = (qs.n > 0).sum(axis=0)
    n_noise = int((qs.n[:, qs.noise].sum(axis=1) > 0).sum())
    n_inf = np.repeat(np.minimum(n_cond, n_noise), m) if expand else None
    (lo, hi), (lo90, hi90) = _intervals_rows(d_rows, (level, 0.90), n_inf)
    p = _p_rows(d_rows, 0.0, n_inf)
    with np.errstate(invalid="ignore"):
        if n_boot < 2:
            se = diff_se = np.full(c * m, np.nan)
        elif all_finite:  # the usual case: no NaN bookkeeping needed
            se = d_rows.std(axis=1, ddof=1)
            diff_se = diff_rows.std(axis=1, ddof=1)
        else:  # rows with fewer than two defined replicates give NaN, silently
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                se = np.nanstd(d_rows, axis=1, ddof=1)
                diff_se = np.nanstd(diff_rows, axis=1, ddof=1)
    shape = (c, m)
    return DrelBootstrap(
        estimate=d0,
        diff=diff0,
        ci_low=lo.reshape(shape),
        ci_high=hi.reshape(shape),
        ci90_low=lo90.reshape(shape),
        ci90_high=hi90.reshape(shape),
        p_value=p.reshape(shape),
        se=se.reshape(shape),
        diff_se=diff_se.reshape(shape),
        valid_fraction=(finite.sum(axis=1) / n_boot).reshape(shape),
        noise_mean=mu0 + qs.shift,
        noise_sd=sd0,
        n_boot=n_boot,
    )
