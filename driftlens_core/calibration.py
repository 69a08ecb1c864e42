"""Calibration of the instrument (SPEC §8): null test, MDD, equivalence, noise decomposition.

Every claim carries its precision, and the question is always the independent unit:
variants, samples and labels of one question are averaged *within* the question first and
never counted as separate evidence.

* **Null test.** Each condition is sampled twice; per question the difference between the
  two samples' mean drift is pure noise. Its mean over questions and a 95% interval over
  questions (t interval on the question-level differences, i.e. the analytic version of
  resampling questions) are reported; the share of conditions whose interval excludes 0
  should be near 5%.
* **Minimum detectable drift**: the true effect that the test actually applied detects
  with 80% power at the two-sided 5% level. The drift test is t-based (the expanded
  percentile interval of :mod:`driftlens_core.bootstrap` uses ``t`` with ``n − 1`` degrees of
  freedom and widens the bootstrap SE by ``sqrt(n/(n − 1))``), so
  ``MDD = sqrt(n/(n − 1)) · (t_{1−α/2, n−1} + t_{power, n−1}) · SE_boot``
  (:func:`mdd_factor`; within 0.3 % of the exact noncentral-t value from n = 8 on). The
  z shorthand ``2.8 × SE`` (1.96 + 0.84) is what it tends to for many questions; used at
  8 questions it promised 80% power and delivered about 61%. Where the SE itself changes
  with the drift (a rate near its ceiling), :func:`mdd_with_varying_se` solves the same
  power condition with the SE at the critical estimate and at the MDD.
* **Equivalence bound** when nothing is detected: the smallest symmetric range ``±b``
  around 0 containing the 90% interval, ``b = max(|lo₉₀|, |hi₉₀|)`` (the TOST reading: the
  effect is within ±b at the 5% level).
* **Noise decomposition** by nested method of moments (ANOVA estimators, negative
  components truncated at 0): labeler (same response labeled twice), model (same prompt
  sampled twice), question×condition interaction and between-question variance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

#: The large-sample (z) MDD factor, z_{0.975} + z_{0.80} ≈ 2.8.
MDD_FACTOR = 2.8


def critical_values(
    n_clusters: ArrayLike | None, *, alpha: float = 0.05, power: float = 0.80
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The two critical values ``(c_α, c_β)`` of the drift test, in units of its SE.

    ``c_α`` is the two-sided rejection point and ``c_β`` the one-sided power quantile; the
    MDD at a constant SE is ``(c_α + c_β) · SE`` (:func:`mdd_factor`), and
    :func:`mdd_with_varying_se` uses them apart when the SE depends on the drift.

    Args:
        n_clusters: questions (clusters) informing each comparison — the ``n`` of the
            expanded percentile test — or ``None`` for a z test.
        alpha: two-sided level of the test.
        power: power wanted at the MDD.

    Returns:
        ``sqrt(n/(n − 1)) · t_{1−α/2, n−1}`` and ``sqrt(n/(n − 1)) · t_{power, n−1}`` per
        entry (NaN where fewer than two clusters inform the comparison), or the z values.
    """
    if n_clusters is None:
        return (
            np.asarray(stats.norm.ppf(1 - alpha / 2), dtype=np.float64),
            np.asarray(stats.norm.ppf(power), dtype=np.float64),
        )
    n = np.asarray(n_clusters, dtype=np.float64)
    c_a = np.full(n.shape, np.nan)
    c_b = np.full(n.shape, np.nan)
    ok = n >= 2
    nn = n[ok]
    scale = np.sqrt(nn / (nn - 1.0))
    c_a[ok] = scale * stats.t.ppf(1 - alpha / 2, nn - 1.0)
    c_b[ok] = scale * stats.t.ppf(power, nn - 1.0)
    return c_a, c_b


def mdd_factor(
    n_clusters: ArrayLike | None, *, alpha: float = 0.05, power: float = 0.80
) -> NDArray[np.float64]:
    """The MDD in units of the bootstrap SE for the test actually applied (constant SE).

    Args:
        n_clusters: questions (clusters) informing each comparison — the ``n`` of the
            expanded percentile test — or ``None`` for a z test (``z_{1−α/2} + z_{power}``).
        alpha: two-sided level of the test.
        power: power wanted at the MDD.

    Returns:
        ``sqrt(n/(n − 1)) · (t_{1−α/2, n−1} + t_{power, n−1})`` per entry (NaN where fewer
        than two clusters inform the comparison).
    """
    c_a, c_b = critical_values(n_clusters, alpha=alpha, power=power)
    return np.asarray(c_a + c_b, dtype=np.float64)


def mdd_with_varying_se(
    size: ArrayLike, se: ArrayLike, c_alpha: ArrayLike, c_beta: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Critical drift and MDD when the SE of the estimate depends on the true drift.

    A test that rejects when the interval around the estimate excludes 0 uses the SE *at
    the estimate*. When the SE changes with the drift (a rate near 0 % or 100 %), the
    smallest estimate the test calls significant is the ``t*`` with
    ``t* = c_α · SE(t*)``, and 80 % power needs the true drift ``δ`` with
    ``δ = t* + c_β · SE(δ)`` (the estimate is then above ``t*`` in 80 % of studies). With a
    constant SE both reduce to ``MDD = (c_α + c_β) · SE``, :func:`mdd_factor`.

    Args:
        size: ``(G,)`` increasing drift sizes (≥ 0, starting at 0) on which the SE is known.
        se: ``(G,)`` or ``(G, K)`` SE at each size (for ``K`` comparisons).
        c_alpha, c_beta: ``()`` or ``(K,)`` critical values (:func:`critical_values`).

    Returns:
        ``(t*, MDD)``, each ``(K,)`` (or scalar-shaped), linearly interpolated between grid
        points; NaN where the equation has no solution on the grid.
    """
    t = np.asarray(size, dtype=np.float64)
    s = np.asarray(se, dtype=np.float64)
    squeeze = s.ndim == 1
    if squeeze:
        s = s[:, None]
    ca = np.broadcast_to(np.asarray(c_alpha, dtype=np.float64), s.shape[1:])
    cb = np.broadcast_to(np.asarray(c_beta, dtype=np.float64), s.shape[1:])

    def first_root(g: NDArray[np.float64]) -> NDArray[np.float64]:
        """Per column the first ``t`` where ``g`` turns non-negative (NaN if it never does)."""
        out = np.full(g.shape[1], np.nan)
        pos = g >= 0
        for k in range(g.shape[1]):
            hits = np.flatnonzero(pos[:, k])
            if hits.size == 0 or not np.isfinite(g[0, k]):
                continue
            i = int(hits[0])
            if i == 0:
                out[k] = t[0]
                continue
            g0, g1 = g[i - 1, k], g[i, k]
            out[k] = t[i - 1] + (t[i] - t[i - 1]) * (-g0) / (g1 - g0)
        return out

    crit = first_root(t[:, None] - ca * s)
    # below t* the difference t − t* − c_β·SE is negative anyway, so no masking is needed
    mdd = first_root(t[:, None] - crit - cb * s)
    if squeeze:
        return crit.reshape(()), mdd.reshape(())
    return crit, mdd


def se_median_factor(contributions: ArrayLike) -> float:
    """Factor that makes one study's SE (hence its MDD) median-unbiased, from its clusters.

    A study's SE² is a variance estimated from ``n`` clusters: roughly ``σ² · χ²_ν / ν``
    with the effective degrees of freedom of a variance estimate,
    ``ν = 2 / (2/(n − 1) + max(κ − 3, 0)/n)`` (``κ`` the kurtosis of the per-cluster
    contributions; ``ν = n − 1`` for normal ones). That is right-skewed, so the typical
    study's SE, and the MDD built on it, sits below the design's: with 30 stems near a 96.6 %
    ceiling (``κ`` ≈ 7) the median study's MDD had 78 % power and an 88 % base rate 74–77 %
    (docs/calibration.md). Dividing the SE by the median of ``sqrt(χ²_ν/ν)``, by
    Wilson–Hilferty ``(1 − 2/(9ν))^{3/2}``, centres the per-study MDD on the design's.

    Args:
        contributions: ``(n,)`` per-cluster contributions to the estimate (centred or not).

    Returns:
        The factor (≥ 1; 1 when fewer than 3 clusters or no spread).
    """
    z = np.asarray(contributions, dtype=np.float64)
    z = z[np.isfinite(z)]
    n = z.size
    if n < 3:
        return 1.0
    z = z - z.mean()
    m2 = float(np.mean(z**2))
    if m2 <= 0:
        return 1.0
    kurt = float(np.mean(z**4)) / m2**2
    nu = 2.0 / (2.0 / (n - 1) + max(kurt - 3.0, 0.0) / n)
    # ν ≥ 1 always (κ ≤ n for n values), so the base stays in (0, 1]
    return float((1.0 - 2.0 / (9.0 * nu)) ** -1.5)


def minimum_detectable(
    se: ArrayLike,
    factor: float = MDD_FACTOR,
    *,
    n_clusters: ArrayLike | None = None,
    alpha: float = 0.05,
    power: float = 0.80,
) -> NDArray[np.float64]:
    """Minimum detectable effect from a standard error.

    Args:
        se: standard error(s) of the estimate (the bootstrap SE).
        factor: the fixed factor used when ``n_clusters`` is not given (2.8: z test).
        n_clusters: questions informing each estimate; when given, the factor is
            :func:`mdd_factor` (t critical values with ``n − 1`` degrees of freedom).
        alpha: two-sided level (with ``n_clusters``).
        power: power at the MDD (with ``n_clusters``).
    """
    se_arr = np.asarray(se, dtype=np.float64)
    if n_clusters is None:
        return factor * se_arr
    return mdd_factor(n_clusters, alpha=alpha, power=power) * se_arr


def minimum_detectable_drel(
    diff_se: ArrayLike,
    noise_sd: ArrayLike,
    *,
    n_clusters: ArrayLike | None,
    alpha: float = 0.05,
    power: float = 0.80,
) -> NDArray[np.float64]:
    """Minimum detectable d_rel: the MDD of the raw difference in units of the noise SD.

    The d_rel test only counts replicates on either side of 0, and a replicate's d_rel
    ``diff*/σ*_noise`` has the sign of its ``diff*`` (σ* > 0), so the test of d_rel *is* the
    test of the raw difference ``μ_c − μ_noise``: its power is set by SE(diff). The
    bootstrap SE of d_rel also carries the sampling spread of σ*_noise (heavy-tailed with
    few questions: at 8 questions it made the MDD 11 % too large and the power at it 90 %),
    which the test never sees. So ``MDD(d_rel) = mdd_factor(n) · SE_boot(diff) / σ_noise``.

    Args:
        diff_se: bootstrap SE of ``μ_c − μ_noise`` (drift units).
        noise_sd: the noise SD that d_rel divides by (the point estimate).
        n_clusters: questions informing each comparison (``None``: z test).
        alpha: two-sided level.
        power: power wanted at the MDD.
    """
    factor = mdd_factor(n_clusters, alpha=alpha, power=power)
    raw = factor * np.asarray(diff_se, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(raw / np.asarray(noise_sd, dtype=np.float64), dtype=np.float64)


def equivalence_bound(ci90_low: ArrayLike, ci90_high: ArrayLike) -> NDArray[np.float64]:
    """Smallest symmetric bound ``b`` with ``[lo₉₀, hi₉₀] ⊂ [−b, b]``."""
    lo = np.asarray(ci90_low, dtype=np.float64)
    hi = np.asarray(ci90_high, dtype=np.float64)
    return np.maximum(np.abs(lo), np.abs(hi))


@dataclass(frozen=True)
class NullTestCondition:
    """Sample-vs-sample difference for one condition (question-level)."""

    mean: float
    ci_low: float
    ci_high: float
    n_questions: int

    @property
    def excludes_zero(self) -> bool:
        return bool(self.ci_low > 0 or self.ci_high < 0)


@dataclass(frozen=True)
class NullTest:
    """Null test over conditions: how often two samples of the same thing "differ"."""

    available: bool
    reason: str
    samples: tuple[str, str] | None
    conditions: tuple[tuple[str, NullTestCondition], ...]

    @property
    def mean_difference(self) -> float:
        vals = [c.mean for _, c in self.conditions if np.isfinite(c.mean)]
        return float(np.mean(vals)) if vals else float("nan")

    @property
    def fraction_excluding_zero(self) -> float:
        tested = [c for _, c in self.conditions if np.isfinite(c.ci_low)]
        return float(np.mean([c.excludes_zero for c in tested])) if tested else float("nan")

    def to_dict(self) -> dict[str, object]:
        return {
            "available": self.available,
            "reason": self.reason,
            "samples": list(self.samples) if self.samples else None,
            "mean_difference": self.mean_difference,
            "fraction_excluding_zero": self.fraction_excluding_zero,
            "conditions": {
                name: {
                    "mean": c.mean,
                    "ci_low": c.ci_low,
                    "ci_high": c.ci_high,
                    "n_questions": c.n_questions,
                    "excludes_zero": c.excludes_zero,
                }
                for name, c in self.conditions
            },
        }


def _t_interval(d: NDArray[np.float64], level: float) -> tuple[float, float, float]:
    n = d.size
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(d.mean())
    if n < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * d.std(ddof=1) / np.sqrt(n))
    return m, m - half, m + half


def null_test(
    values: ArrayLike,
    question: ArrayLike,
    condition: ArrayLike,
    sample: ArrayLike | None,
    *,
    condition_names: tuple[str, ...],
    sample_names: tuple[str, ...] = (),
    level: float = 0.95,
) -> NullTest:
    """Compare the two lowest samples of every condition, question by question.

    Args:
        values: ``(N,)`` drift values.
        question, condition: ``(N,)`` integer codes.
        sample: ``(N,)`` integer sample codes (``None``: no repeated samples).
        condition_names: names for the condition codes.
        sample_names: names for the sample codes (per condition the two lowest codes
            present are compared).
        level: confidence level of the per-condition interval.
    """
    if sample is None:
        return NullTest(False, "no sample column: each condition was sampled once", None, ())
    x = np.asarray(values, dtype=np.float64)
    q = np.asarray(question, dtype=np.int64)
    c = np.asarray(condition, dtype=np.int64)
    s = np.asarray(sample, dtype=np.int64)
    if np.unique(s).size < 2:
        return NullTest(False, "only one sample per condition", None, ())
    n_q = int(q.max()) + 1
    results = []
    used: set[tuple[str, str]] = set()
    for j, name in enumerate(condition_names):
        in_c = c == j
        codes = np.unique(s[in_c])
        if codes.size < 2:
            results.append((name, NullTestCondition(float("nan"), float("nan"), float("nan"), 0)))
            continue
        # the two lowest samples of this condition (a baseline's sample 0 is the reference
        # itself, so its repeated samples start at 1)
        pair = []
        for which in (int(codes[0]), int(codes[1])):
            m = in_c & (s == which)
            n = np.bincount(q[m], minlength=n_q)
            tot = np.bincount(q[m], weights=x[m], minlength=n_q)
            pair.append((n, tot))
        (n0, t0), (n1, t1) = pair
        both = (n0 > 0) & (n1 > 0)
        d = t0[both] / n0[both] - t1[both] / n1[both]
        mean, lo, hi = _t_interval(d, level)
        results.append((name, NullTestCondition(mean, lo, hi, int(d.size))))
        used.add(
            tuple(sample_names[int(k)] if sample_names else str(int(k)) for k in codes[:2])  # type: ignore[arg-type]
        )
    names = sorted(used)[0] if len(used) == 1 else None
    return NullTest(True, "", names, tuple(results))


@dataclass(frozen=True)
class NoiseDecomposition:
    """Variance components of drift (ANOVA estimators) and their shares of the total.

    A component is NaN when the design cannot separate it (e.g. no repeated labels).
    ``within_cell`` is the spread of replicate rows of one question and condition when the
    table has no ``sample`` column to say what the replicates are (variants, samples).
    """

    between_question: float
    question_condition: float
    model: float
    labeler: float
    within_cell: float = float("nan")

    @property
    def total(self) -> float:
        parts = [
            v
            for v in (
                self.between_question,
                self.question_condition,
                self.model,
                self.labeler,
                self.within_cell,
            )
            if np.isfinite(v)
        ]
        return float(sum(parts))

    def shares(self) -> dict[str, float]:
        tot = self.total
        parts = {
            "between_question": self.between_question,
            "question_condition": self.question_condition,
            "model": self.model,
            "labeler": self.labeler,
            "within_cell": self.within_cell,
        }
        return {
            k: (v / tot if tot > 0 and np.isfinite(v) else float("nan")) for k, v in parts.items()
        }

    def to_dict(self) -> dict[str, object]:
        return {
            "variance": {
                "between_question": self.between_question,
                "question_condition": self.question_condition,
                "model": self.model,
                "labeler": self.labeler,
                "within_cell": self.within_cell,
            },
            "share": self.shares(),
        }


def _dense(groups: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Compact non-negative integer group codes to ``0..G-1`` in O(N) (no sort)."""
    present = np.bincount(groups) > 0
    index = np.cumsum(present) - 1
    return index[groups], np.flatnonzero(present)


def _pooled_within(values: NDArray[np.float64], groups: NDArray[np.int64]) -> tuple[float, float]:
    """Pooled within-group variance and the mean size of groups with ≥ 2 members."""
    inv, _ = _dense(groups)
    counts = np.bincount(inv)
    means = np.bincount(inv, weights=values) / counts
    resid = values - means[inv]
    dof = int((counts - 1).sum())
    if dof <= 0:
        return float("nan"), float("nan")
    multi = counts[counts > 1]
    size = float(multi.mean()) if multi.size else float("nan")
    return float((resid**2).sum() / dof), size


def _group_means(
    values: NDArray[np.float64], groups: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Means per group and the (sorted) group codes they belong to."""
    inv, keys = _dense(groups)
    means = np.bincount(inv, weights=values) / np.bincount(inv)
    return means, keys


def noise_decomposition(
    values: ArrayLike,
    question: ArrayLike,
    condition: ArrayLike,
    sample: ArrayLike | None = None,
    label_run: ArrayLike | None = None,
) -> NoiseDecomposition:
    """Nested variance decomposition of drift: question > question×condition > sample > label.

    Bottom-up method of moments: the pooled within-group variance at one level estimates
    that level's component plus the lower ones divided by the mean replication; negative
    differences are truncated at 0. Condition means are removed first (they are the fixed
    effects the study is about). Unbalanced designs use mean group sizes, so the estimates
    are approximate there; they are meant to say *where* the noise comes from.

    Args:
        values: ``(N,)`` drift values.
        question, condition: ``(N,)`` integer codes.
        sample: ``(N,)`` sample codes (the same prompt sampled again); ``None`` if absent.
        label_run: ``(N,)`` labeling-run codes (the same response labeled again).
    """
    x = np.asarray(values, dtype=np.float64)
    q = np.asarray(question, dtype=np.int64)
    c = np.asarray(condition, dtype=np.int64)
    nan = float("nan")
    # remove condition means
    cm, ckeys = _group_means(x, c)
    x = x - cm[np.searchsorted(ckeys, c)]
    n_c = int(c.max()) + 1
    cell = q * n_c + c
    if sample is not None:
        s = np.asarray(sample, dtype=np.int64)
        n_s = int(s.max()) + 1
        unit = cell * n_s + s
        labeling = None
        x_unit, unit_keys = x, unit
        if label_run is not None:
            labeling = _pooled_within(x, unit)
            x_unit, unit_keys = _group_means(x, unit)
        lower = LowerLevels.estimate(
            labeling, _pooled_within(x_unit, unit_keys // n_s), has_sample=True
        )
        level_vals, level_groups = x_unit, unit_keys // n_s
    else:
        # replicate rows of a cell without sample ids (e.g. variants): not reported as a
        # component, but their noise must not be counted as interaction
        lower = LowerLevels.estimate(None, _pooled_within(x, cell), has_sample=False)
        level_vals, level_groups = x, cell
    cell_means, cell_keys = _group_means(level_vals, level_groups)
    cell_q = cell_keys // n_c
    raw_qc, n_cells = _pooled_within(cell_means, cell_q)
    inter = max(raw_qc - lower.below, 0.0) if np.isfinite(raw_qc) else nan
    qmeans, _ = _group_means(cell_means, cell_q)
    return decomposition_from_levels(qmeans, lower, inter=inter, n_cells=n_cells)


@dataclass(frozen=True)
class LowerLevels:
    """The components below the question × condition cell, estimated bottom-up.

    Attributes:
        labeler: The labeling-run variance (NaN without labeling runs).
        model: The sampling variance (NaN without sample ids).
        within: A cell's replicate rows' variance without sample ids (NaN with them).
        below: What these levels contribute to a cell mean's variance.
    """

    labeler: float
    model: float
    within: float
    below: float

    @classmethod
    def estimate(
        cls,
        labeling: tuple[float, float] | None,
        replicates: tuple[float, float],
        *,
        has_sample: bool,
    ) -> LowerLevels:
        """The lower levels from pooled within-group variances and mean group sizes.

        Shared by the row path (:func:`noise_decomposition`) and the streamed one
        (``driftlens_core.row_sums``), so the two estimate them identically.

        Args:
            labeling: The labeling runs' pooled variance and group size within a sample
                unit (``None``: no labeling runs).
            replicates: The samples' within a cell (``has_sample``), else the cell's rows'.
            has_sample: Whether the rows carry sample ids.
        """
        nan = float("nan")
        labeler = model = within = nan
        below = 0.0
        if has_sample:
            if labeling is not None:
                lab_var, lab_n = labeling
                labeler = max(lab_var, 0.0) if np.isfinite(lab_var) else nan
                below = labeler / lab_n if np.isfinite(labeler) else 0.0
            raw, n_rep = replicates
            if np.isfinite(raw):
                model = max(raw - below, 0.0)
                below = model / n_rep + below / n_rep
        else:
            raw_cell, n_cell_rows = replicates
            if np.isfinite(raw_cell):
                within = raw_cell
                below = raw_cell / n_cell_rows
        return cls(labeler, model, within, below)


def decomposition_from_levels(
    qmeans: np.ndarray, lower: LowerLevels, *, inter: float, n_cells: float
) -> NoiseDecomposition:
    """The decomposition once the lower levels are estimated: the question level on top.

    Shared by the row path (:func:`noise_decomposition`) and the streamed one
    (``driftlens_core.row_sums``), so the two subtract the lower levels identically.

    Args:
        qmeans: per-question means of the condition-centred cell means.
        lower: the lower components, as estimated (:meth:`LowerLevels.estimate`).
        inter: the question × condition variance (NaN when not estimable).
        n_cells: the mean number of cells per question with two or more (NaN when unknown).
    """
    nan = float("nan")
    between_raw = float(qmeans.var(ddof=1)) if qmeans.size > 1 else nan
    below_q = ((inter if np.isfinite(inter) else 0.0) + lower.below) / (
        n_cells if np.isfinite(n_cells) else 1.0
    )
    between = max(between_raw - below_q, 0.0) if np.isfinite(between_raw) else nan
    return NoiseDecomposition(
        between_question=between,
        question_condition=inter,
        model=lower.model,
        labeler=lower.labeler,
        within_cell=lower.within,
    )
