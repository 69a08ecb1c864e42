"""One model's row-level reductions, built slice by slice of questions with the same bits.

:func:`driftlens_core.analysis.analyze_table` needs a model's rows only for a few
reductions: the per-question sums of the bootstrap (:func:`~driftlens_core.bootstrap.
question_sums`), the sum of squares of the mixed model, the null test's per-question sample
means, Cohen's d and the noise decomposition. Everything else is computed from those. Here
they are accumulated from :class:`RowChunk` slices of the model's rows (every question's
rows in one slice, slices in question order), and the result does not depend on where the
slices are cut:

* every per-question and per-cell quantity comes from :func:`numpy.bincount`, which adds a
  bin's weights one after another in row order, so a question's bins are the same whatever
  else its slice holds; the slices' arrays are stacked into the model's ``(Q, ...)`` arrays;
* the two sums over all rows (the noise rows' mean that shifts the values, and the sum of
  squares) are axis-0 reductions of ``(N, M)`` arrays, which numpy adds row after row when
  ``M >= 2``: a running total carried from slice to slice is the same total. (With one
  metric numpy sums pairwise, which a split changes: :func:`reduce_rows` refuses it.)
* the statistics over questions (Cohen's d, the noise decomposition's pooled variances)
  are computed at the end from those arrays.

:func:`driftlens_core.analysis.analyze_table` reduces the whole model as one slice, the
out-of-core path (``driftlens analyze --chunk-questions``) one slice of questions at a time,
so both write the same ``stats.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from driftlens_core.bootstrap import QuestionSums
from driftlens_core.calibration import (
    LowerLevels,
    NoiseDecomposition,
    NullTest,
    NullTestCondition,
    decomposition_from_levels,
)
from driftlens_core.calibration import _t_interval as t_interval

F = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(frozen=True)
class RowChunk:
    """A slice of one model's rows.

    Attributes:
        question: ``(n,)`` the model's question codes ``0..Q-1``; a question's rows are all
            in one slice, and slices come in increasing question order.
        condition: ``(n,)`` the model's condition codes ``0..C-1``.
        values: ``(n, M)`` drift values.
        sample: ``(n,)`` sample codes, or ``None`` when the table has no sample column.
    """

    question: Ints
    condition: Ints
    values: F
    sample: Ints | None


@dataclass(frozen=True)
class Within:
    """Pooled within-group sums of one level of the noise decomposition, per question."""

    ss: F  # (Q, M) squared deviations from the group means
    dof: int  # sum over groups of (size - 1)
    multi: int  # groups with at least two members
    multi_rows: int  # their members


@dataclass(frozen=True)
class ModelRowSums:
    """Everything :func:`driftlens_core.analysis.analyze_table` needs from a model's rows."""

    qs: QuestionSums
    sumsq: F  # (M,) sum of (x - shift)^2 over all rows
    raw_sums: F  # (Q, C, M) sum of x per cell
    cell_ss: F  # (Q, C, M) sum of (x - cell mean)^2 per cell
    null_codes: tuple[tuple[int, ...], ...]  # per condition, its two lowest sample codes
    n_sample_codes: int  # distinct sample codes (0: no sample column)
    null_n: F  # (2, Q, C) rows of each condition's two lowest samples per question
    null_tot: F  # (2, Q, C, M) their sums
    labeled: bool  # the label level is separated (samples and label runs)
    lab: Within | None  # rows within (question, condition, sample) units
    rep: Within  # level values (unit means, or rows) within cells
    cell_mean: F  # (Q, C, M) mean of the level values per cell


def _within(values: F, groups: Ints, question_of: Ints, n_q: int) -> tuple[Within, F, Ints]:
    """Pooled within-group sums per question, the group means and the group codes."""
    keys, inv = np.unique(groups, return_inverse=True)
    inv = inv.reshape(-1)
    counts = np.bincount(inv)
    n_m = values.shape[1]
    means = np.empty((keys.size, n_m))
    ss = np.empty((n_q, n_m))
    q_of_group = np.zeros(keys.size, dtype=np.int64)
    q_of_group[inv] = question_of  # every member of a group has the group's question
    for m in range(n_m):
        means[:, m] = np.bincount(inv, weights=values[:, m]) / counts
        resid = values[:, m] - means[inv, m]
        per_group = np.bincount(inv, weights=resid**2)
        ss[:, m] = np.bincount(q_of_group, weights=per_group, minlength=n_q)
    multi = counts[counts > 1]
    within = Within(
        ss=ss, dof=int((counts - 1).sum()), multi=int(multi.size), multi_rows=int(multi.sum())
    )
    return within, means, keys


class _Accumulator:
    """The model-wide arrays, filled slice by slice (module docstring)."""

    def __init__(
        self,
        n_q: int,
        n_c: int,
        n_m: int,
        null_codes: list[tuple[int, ...]],
        n_s: int,
        labeled: bool,
    ) -> None:
        self.n_q, self.n_c, self.n_m, self.n_s = n_q, n_c, n_m, n_s
        self.null_codes = null_codes
        self.labeled = labeled
        self.n = np.zeros((n_q, n_c))
        self.sums = np.zeros((n_q, n_c, n_m))
        self.noise_sumsq = np.zeros((n_q, n_m))
        self.raw_sums = np.zeros((n_q, n_c, n_m))
        self.cell_ss = np.zeros((n_q, n_c, n_m))
        self.cell_mean = np.full((n_q, n_c, n_m), np.nan)
        self.null_n = np.zeros((2, n_q, n_c))
        self.null_tot = np.zeros((2, n_q, n_c, n_m))
        self.lab_ss = np.zeros((n_q, n_m))
        self.rep_ss = np.zeros((n_q, n_m))
        self.counts = {"lab": [0, 0, 0], "rep": [0, 0, 0]}
        self.sumsq: F | None = None
        lows = np.full((2, n_c), -1, dtype=np.int64)
        for j, codes in enumerate(null_codes):
            if len(codes) >= 2:
                lows[:, j] = codes[:2]
        self.lows = lows

    def add(self, chunk: RowChunk, noise: NDArray[np.bool_], shift: F) -> None:
        q0 = int(chunk.question.min())
        q = chunk.question - q0
        nq = int(q.max()) + 1
        rows = slice(q0, q0 + nq)
        c, x, n_c = chunk.condition, chunk.values, self.n_c
        cell = q * n_c + c
        size = nq * n_c
        is_noise = noise[c]
        xs = x - shift
        # the bootstrap's question sums, as driftlens_core.bootstrap.question_sums builds them
        self.n[rows] = np.bincount(cell, minlength=size).astype(np.float64).reshape(nq, n_c)
        counts = self.n[rows].reshape(-1)
        for m in range(self.n_m):
            w = np.bincount(cell, weights=xs[:, m], minlength=size)
            self.sums[rows, :, m] = w.reshape(nq, n_c)
            self.noise_sumsq[rows, m] = np.bincount(
                q[is_noise], weights=xs[is_noise, m] ** 2, minlength=nq
            )
            raw = np.bincount(cell, weights=x[:, m], minlength=size)
            self.raw_sums[rows, :, m] = raw.reshape(nq, n_c)
            with np.errstate(invalid="ignore", divide="ignore"):
                resid = x[:, m] - (raw / counts)[cell]
            self.cell_ss[rows, :, m] = np.bincount(cell, weights=resid**2, minlength=size).reshape(
                nq, n_c
            )
        sq = xs**2
        self.sumsq = (
            sq.sum(axis=0)
            if self.sumsq is None
            else np.concatenate([self.sumsq[None], sq]).sum(axis=0)
        )
        s = chunk.sample
        if s is not None:
            for k in (0, 1):
                pick = s == self.lows[k][c]
                self.null_n[k, rows] = np.bincount(cell[pick], minlength=size).reshape(nq, n_c)
                for m in range(self.n_m):
                    tot = np.bincount(cell[pick], weights=x[pick, m], minlength=size)
                    self.null_tot[k, rows, :, m] = tot.reshape(nq, n_c)
        # the noise decomposition's levels
        if s is not None and self.labeled:
            unit = cell * self.n_s + s
            lab, level, keys = _within(x, unit, q, nq)
            self._count("lab", lab)
            self.lab_ss[rows] = lab.ss
            level_cell = keys // self.n_s
        else:
            level, level_cell = x, cell
        rep, means, keys = _within(level, level_cell, level_cell // n_c, nq)
        self._count("rep", rep)
        self.rep_ss[rows] = rep.ss
        block = self.cell_mean[rows].reshape(size, self.n_m)
        block[keys] = means
        self.cell_mean[rows] = block.reshape(nq, n_c, self.n_m)

    def _count(self, level: str, w: Within) -> None:
        tally = self.counts[level]
        tally[0] += w.dof
        tally[1] += w.multi
        tally[2] += w.multi_rows


def reduce_rows(
    chunks: Callable[[], Iterable[RowChunk]],
    *,
    n_questions: int,
    noise: NDArray[np.bool_],
    n_metrics: int,
    labeled: bool,
) -> ModelRowSums:
    """Reduce one model's rows, handed over in slices, in two passes (module docstring).

    Args:
        chunks: returns the model's slices, in question order, each time it is called
            (twice: the first pass finds the noise mean and the samples of each condition).
        n_questions: the model's questions ``Q``.
        noise: ``(C,)`` mask of the noise conditions.
        n_metrics: metric columns ``M``.
        labeled: the table has a label-run column (with samples: a label level).

    Raises:
        ValueError: no noise rows, or one metric with more than one slice (see module
            docstring).
    """
    n_c = noise.shape[0]
    total: F | None = None
    n_noise = 0
    present: NDArray[np.bool_] | None = None
    n_slices = 0
    has_sample = False
    for chunk in chunks():
        n_slices += 1
        xn = chunk.values[noise[chunk.condition]]
        n_noise += xn.shape[0]
        if xn.shape[0]:
            total = (
                xn.sum(axis=0) if total is None else np.concatenate([total[None], xn]).sum(axis=0)
            )
        if chunk.sample is not None:
            has_sample = True
            n_s = int(chunk.sample.max()) + 1
            seen = np.zeros((n_c, n_s), dtype=bool)
            seen[chunk.condition, chunk.sample] = True
            if present is None:
                present = seen
            else:
                width = max(present.shape[1], n_s)
                grown = np.zeros((n_c, width), dtype=bool)
                grown[:, : present.shape[1]] |= present
                grown[:, :n_s] |= seen
                present = grown
    if total is None:
        raise ValueError("no noise rows: the floor cannot be estimated")
    if n_metrics < 2 and n_slices > 1:
        raise ValueError("a table with one metric column is analysed in one piece")
    shift = total / n_noise
    null_codes: list[tuple[int, ...]] = []
    n_s = 0
    if has_sample and present is not None:
        n_s = present.shape[1]
        null_codes = [tuple(int(k) for k in np.flatnonzero(present[j])[:2]) for j in range(n_c)]
    acc = _Accumulator(n_questions, n_c, n_metrics, null_codes, n_s, labeled)
    for chunk in chunks():
        acc.add(chunk, noise, shift)
    assert acc.sumsq is not None
    n_codes = int(np.flatnonzero(present.any(axis=0)).size) if present is not None else 0
    return ModelRowSums(
        qs=QuestionSums(
            n=acc.n, sums=acc.sums, noise_sumsq=acc.noise_sumsq, noise=noise, shift=shift
        ),
        sumsq=acc.sumsq,
        raw_sums=acc.raw_sums,
        cell_ss=acc.cell_ss,
        null_codes=tuple(null_codes),
        n_sample_codes=n_codes,
        null_n=acc.null_n,
        null_tot=acc.null_tot,
        labeled=labeled and has_sample,
        lab=Within(acc.lab_ss, *acc.counts["lab"]) if labeled and has_sample else None,
        rep=Within(acc.rep_ss, *acc.counts["rep"]),
        cell_mean=acc.cell_mean,
    )


def cohens_d_from_sums(sums: ModelRowSums, condition: int, reference: Ints, metric: int) -> float:
    """Cohen's d of a condition's rows against the reference conditions' rows.

    :func:`driftlens_core.effects.cohens_d` from per-cell moments: each group's mean is
    its cells' total over its rows, its sum of squares the cells' own plus their means'
    spread (the parallel-variance formula). NaN when a group has fewer than two rows or
    the pooled SD is 0.
    """

    def moments(cols: Ints) -> tuple[float, float, float]:
        all_n: F = sums.qs.n[:, cols].reshape(-1)
        keep = all_n > 0
        n: F = all_n[keep]
        s: F = sums.raw_sums[:, cols, metric].reshape(-1)[keep]
        ss: F = sums.cell_ss[:, cols, metric].reshape(-1)[keep]
        total = float(n.sum())
        if total < 2:
            return total, float("nan"), float("nan")
        mean = float(s.sum() / total)
        m2 = float((ss + n * (s / n - mean) ** 2).sum())
        return total, mean, m2

    nx, mx, m2x = moments(np.array([condition], dtype=np.int64))
    ny, my, m2y = moments(reference)
    if nx < 2 or ny < 2:
        return float("nan")
    pooled = (m2x + m2y) / (nx + ny - 2)
    if not pooled > 0:
        return float("nan")
    return float((mx - my) / np.sqrt(pooled))


def null_test_from_sums(
    sums: ModelRowSums,
    metric: int,
    *,
    condition_names: tuple[str, ...],
    sample_names: tuple[str, ...],
    has_sample: bool,
    level: float = 0.95,
) -> NullTest:
    """:func:`driftlens_core.calibration.null_test` from the per-question sample sums."""
    if not has_sample:
        return NullTest(False, "no sample column: each condition was sampled once", None, ())
    if sums.n_sample_codes < 2:
        return NullTest(False, "only one sample per condition", None, ())
    results = []
    used: set[tuple[str, ...]] = set()
    for j, name in enumerate(condition_names):
        codes = sums.null_codes[j] if j < len(sums.null_codes) else ()
        if len(codes) < 2:
            results.append((name, NullTestCondition(float("nan"), float("nan"), float("nan"), 0)))
            continue
        n0, n1 = sums.null_n[0, :, j], sums.null_n[1, :, j]
        t0, t1 = sums.null_tot[0, :, j, metric], sums.null_tot[1, :, j, metric]
        both = (n0 > 0) & (n1 > 0)
        d = t0[both] / n0[both] - t1[both] / n1[both]
        mean, lo, hi = t_interval(d, level)
        results.append((name, NullTestCondition(mean, lo, hi, int(d.size))))
        used.add(tuple(sample_names[k] if sample_names else str(k) for k in codes[:2]))
    names = sorted(used)[0] if len(used) == 1 else None
    return NullTest(True, "", names, tuple(results))  # type: ignore[arg-type]


def _pooled(w: Within, metric: int) -> tuple[float, float]:
    """Pooled within-group variance and mean size of the groups with two or more members."""
    if w.dof <= 0:
        return float("nan"), float("nan")
    size = w.multi_rows / w.multi if w.multi else float("nan")
    return float(w.ss[:, metric].sum() / w.dof), size


def noise_decomposition_from_sums(
    sums: ModelRowSums, metric: int, *, has_sample: bool
) -> NoiseDecomposition:
    """:func:`driftlens_core.calibration.noise_decomposition` from the model's sums.

    The same method of moments; the condition means are removed from the cell means (the
    within-group spreads do not depend on them), and every sum over questions is taken
    over the model's per-question arrays, so the result does not depend on the slices.
    """
    nan = float("nan")
    labeling = _pooled(sums.lab, metric) if has_sample and sums.lab is not None else None
    lower = LowerLevels.estimate(labeling, _pooled(sums.rep, metric), has_sample=has_sample)
    n = sums.qs.n
    present = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        cond_mean = sums.raw_sums[:, :, metric].sum(axis=0) / n.sum(axis=0)
    cm = np.where(present, sums.cell_mean[:, :, metric] - cond_mean[None, :], 0.0)
    k = present.sum(axis=1)  # cells per question
    has = k > 0
    qmeans = cm[has].sum(axis=1) / k[has]
    resid = np.where(present[has], cm[has] - qmeans[:, None], 0.0)
    dof = int((k[has] - 1).sum())
    multi = k[k > 1]
    if dof > 0:
        raw_qc = float((resid**2).sum() / dof)
        n_cells = float(multi.sum() / multi.size)
        inter = max(raw_qc - lower.below, 0.0)
    else:
        n_cells = inter = nan
    return decomposition_from_levels(qmeans, lower, inter=inter, n_cells=n_cells)
