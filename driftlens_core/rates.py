"""Aligned rates of arms, their drift against a reference arm, and its calibration.

The disposition instrument (seed 001) measures a *rate*: the share of scored responses that
a classifier puts in a battery's aligned category. An arm's drift is the difference of its
aligned rate from the reference arm's, in percentage points. Everything here is pure: the
caller passes integer codes and 0/1 indicators and gets frozen results back.

The stem is the independent unit
--------------------------------
Paraphrases of one stem and the two samples of one probe are correlated, so every interval
resamples *stems* (clusters) with replacement and keeps all rows of a drawn stem, in every
arm at once: the arms of one study answer the same stems, and drawing a stem for all arms
keeps the pairing that makes a drift much more precise than two separate rates. A replicate
needs only per-stem sufficient statistics, ``n`` (scored responses) and ``k`` (aligned ones)
per arm and per arm × sample, so one call of
:func:`driftlens_core.bootstrap.cluster_bootstrap_sums` (compiled twin included) yields every
rate of every replicate; the aligned rate is the pooled ratio ``Σk / Σn``.

Intervals, test and MDD
-----------------------
The 95% interval is reported two ways: the plain percentile interval (what the seed paper
used) and Hesterberg's expanded percentile interval (the workbench's primary one, see
:mod:`driftlens_core.bootstrap`), which corrects the narrowness of the plain interval at
30 stems. The p-value inverts the primary interval. The minimum detectable drift uses the
critical values *of that test*: with ``n`` stems the two-sided 5% test rejects when the
estimate exceeds ``c_α · SE`` with ``c_α = sqrt(n/(n−1)) · t_{0.975, n−1}``, and 80% power
adds ``c_β = sqrt(n/(n−1)) · t_{0.80, n−1}``. Without a cluster count (the plain interval)
they are ``z_{0.975}`` and ``z_{0.80}`` (sum ≈ 2.8).

The SE of a rate difference is not constant: near a ceiling (aligned rates of 95%+) it grows
as the arm's rate falls, because stems that sit at 100% start to move by different amounts.
The SE measured on a study without drift therefore overstates what the test can detect
(``(c_α + c_β) · SE₀`` had 60% power on the seed-like preset, not 80%). The MDD models the
SE as a function of the drift: the reference arm's stems are fitted by a logit-normal
model (stem logits ``N(μ, τ²)``, binomial answers; maximum likelihood by Gauss–Hermite
quadrature), a drift is a common shift of every stem's logit (the alternative the
simulator and the seed's dose curves use), and the variance of the paired difference is
``Var_stems(π_arm − π_ref) + E[π_arm(1 − π_arm)]/m_arm + E[π_ref(1 − π_ref)]/m_ref`` per
stem (``m`` = scored answers per stem). The measured bootstrap SE anchors that curve at the
observed drift, and :func:`driftlens_core.calibration.mdd_with_varying_se` solves the power
condition with the SE at the critical estimate and at the MDD. The MDD is read in the
direction away from the nearer bound (towards fewer aligned answers when the reference is
above 50%); with a constant SE it is exactly ``(c_α + c_β) · SE``, reported beside it as
``mdd_constant_se`` (the seed's own formula, comparable to its Table 2). The bootstrap SE
the varying MDD starts from is first made median-unbiased
(:func:`driftlens_core.calibration.se_median_factor`, from the kurtosis of the stems'
contributions): a study's SE is right-skewed over studies, so without it the typical
study's MDD sat 3-5 % below the drift detected in 80 % of studies (power 74-78 % at the
median MDD; docs/calibration.md, issue 23 item 2). ``mdd_constant_se`` keeps the plain SE.
The 90% interval (same method as the primary one) gives the equivalence bound
``b = max(|lo₉₀|, |hi₉₀|)``.

Null test
---------
Each arm answers every probe twice. Sample 1 minus sample 2 of the same arm has true value
0; its stem-bootstrap interval should exclude 0 in about 5% of arms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from driftlens_core.bootstrap import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_CHUNK,
    Seed,
    bootstrap_p_value,
    cluster_bootstrap_sums,
    percentile_interval,
)
from driftlens_core.calibration import (
    critical_values,
    equivalence_bound,
    mdd_with_varying_se,
    noise_decomposition,
    se_median_factor,
)
from driftlens_core.logit_normal import drift_se_curve, fit_logit_normal


def se_from_interval(low: float, high: float, level: float = 0.95) -> float:
    """Standard error implied by a symmetric normal interval ``[low, high]`` at ``level``.

    Used to read published intervals (e.g. a paper's 95% CI) back into an SE.
    """
    return float((high - low) / (2.0 * stats.norm.ppf(0.5 + level / 2.0)))


@dataclass(frozen=True)
class ArmDrift:
    """One arm of one battery against the reference arm (rates as fractions, drift in pp).

    Interval fields are NaN for the reference arm itself and where too few stems inform the
    comparison.
    """

    aligned_rate: float
    drift_pp: float
    ci_low: float
    ci_high: float
    ci_plain_low: float
    ci_plain_high: float
    ci90_low: float
    ci90_high: float
    se: float
    mdd: float
    equivalence_bound: float
    p_value: float
    n_stems: int
    n_responses: int
    n_missing: int
    mdd_constant_se: float = float("nan")


@dataclass(frozen=True)
class NullArm:
    """Sample-1-minus-sample-2 difference of one arm (pp) with its stem-bootstrap interval."""

    mean_diff_pp: float
    ci_low: float
    ci_high: float
    n_stems: int

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies entirely above or below 0."""
        return bool(self.ci_low > 0 or self.ci_high < 0)


@dataclass(frozen=True)
class RateComparison:
    """Every arm of one battery: drift against the reference and the null test."""

    arm_names: tuple[str, ...]
    reference: str
    arms: tuple[ArmDrift, ...]
    null: tuple[NullArm | None, ...]
    n_boot: int
    expanded: bool

    def arm(self, name: str) -> ArmDrift:
        """The result of arm ``name``."""
        return self.arms[self.arm_names.index(name)]

    @property
    def null_excluding(self) -> tuple[int, int]:
        """``(k, N)``: arms whose null interval excludes 0, out of arms with a null test."""
        tested = [n for n in self.null if n is not None and np.isfinite(n.ci_low)]
        return sum(n.excludes_zero for n in tested), len(tested)


def _mdd_varying(
    n_arm: NDArray[np.float64],
    k_arm: NDArray[np.float64],
    reference: int,
    others: list[int],
    drift: NDArray[np.float64],
    se: NDArray[np.float64],
    c_alpha: NDArray[np.float64],
    c_beta: NDArray[np.float64],
    scale: float,
) -> NDArray[np.float64] | None:
    """MDD per compared arm with the SE modelled along the drift (``None``: no model)."""
    ref_n, ref_k = n_arm[:, reference], k_arm[:, reference]
    if ref_k.sum() <= 0 or ref_k.sum() >= ref_n.sum():
        return None  # a reference at 0% or 100% gives the curve nothing to start from
    fit = fit_logit_normal(k_arm, n_arm)
    if fit is None:
        return None
    informed = ref_n > 0
    m_ref = float(ref_n[informed].mean())
    m_arm = np.array(
        [n_arm[(n_arm[:, j] > 0) & informed, j].mean() if ((n_arm[:, j] > 0) & informed).any()
         else np.nan for j in others]
    )  # fmt: skip
    if not np.isfinite(m_arm).all():
        return None
    direction = -1 if fit.rate(reference) >= 0.5 else 1
    _, size, var = drift_se_curve(
        fit, m_arm, m_ref, direction=direction, reference=reference, scale=scale
    )
    # anchor the modelled curve at the observed drift, where the bootstrap measured the SE
    obs = np.clip(direction * drift, 0.0, size[-1])
    var_obs = np.array([np.interp(obs[i], size, var[:, i]) for i in range(len(obs))])
    with np.errstate(invalid="ignore", divide="ignore"):
        se_curve = se[None, :] * np.sqrt(var / var_obs[None, :])
    _, mdd = mdd_with_varying_se(size, se_curve, c_alpha, c_beta)
    return np.asarray(mdd, dtype=np.float64)


def _se_median_factor(
    n_arm: NDArray[np.float64], k_arm: NDArray[np.float64], reference: int, j: int
) -> float:
    """:func:`~driftlens_core.calibration.se_median_factor` of arm ``j``'s paired drift.

    The per-stem contributions are the linearised pooled-rate difference (the influence of
    each stem on ``Σk_j/Σn_j − Σk_ref/Σn_ref``), over the stems that inform both arms.
    """
    both = (n_arm[:, j] > 0) & (n_arm[:, reference] > 0)
    if both.sum() < 3:
        return 1.0
    nj, kj = n_arm[both, j], k_arm[both, j]
    nr, kr = n_arm[both, reference], k_arm[both, reference]
    z = (kj - kj.sum() / nj.sum() * nj) / nj.mean() - (kr - kr.sum() / nr.sum() * nr) / nr.mean()
    return se_median_factor(z)


def _cells(
    cluster: NDArray[np.int64], group: NDArray[np.int64], y: NDArray[np.float64], n_c: int, n_g: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per (cluster, group) counts of scored rows and aligned rows."""
    idx = cluster * n_g + group
    n = np.bincount(idx, minlength=n_c * n_g).astype(np.float64).reshape(n_c, n_g)
    k = np.bincount(idx, weights=y, minlength=n_c * n_g).astype(np.float64).reshape(n_c, n_g)
    return n, k


def _ratio(k: NDArray[np.float64], n: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, k / np.where(n > 0, n, 1.0), np.nan)


def _interval(
    reps: NDArray[np.float64], level: float, n_inf: NDArray[np.float64] | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    if reps.shape[1] == 0:
        empty = np.empty(0)
        return empty, empty
    lo, hi = percentile_interval(reps, level, n_inf)
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def compare_rates(
    cluster: ArrayLike,
    arm: ArrayLike,
    sample: ArrayLike,
    aligned: ArrayLike,
    *,
    arm_names: Sequence[str],
    reference: int,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: Seed = None,
    level: float = 0.95,
    expand: bool = True,
    chunk: int = DEFAULT_CHUNK,
    scale: float = 100.0,
    binary: bool = True,
) -> RateComparison:
    """Aligned rate, drift vs the reference arm and null test of every arm (see module doc).

    Args:
        cluster: ``(N,)`` integer cluster codes ``0..Q−1`` (stems; the calibration benchmark
            also passes probes to show what ignoring the stem does).
        arm: ``(N,)`` integer arm codes ``0..A−1``.
        sample: ``(N,)`` integer sample codes; per arm the two lowest present are compared
            by the null test.
        aligned: ``(N,)`` 1 (aligned), 0 (not aligned) or NaN (no scored answer: counted in
            ``n_missing``, never in the rate).
        arm_names: names of the arm codes.
        reference: code of the reference arm.
        n_boot: bootstrap replicates ``B``.
        seed: integer seed or Generator; same seed, same numbers under both implementations.
        level: level of the main interval (the 90% interval is always computed).
        expand: expanded percentile interval and its critical values as primary (default);
            ``False`` makes the plain interval primary (the MDD factor is then 2.8).
        chunk: replicates per chunk (part of the random stream).
        scale: unit of the drift: 100 gives percentage points of a rate; 1 keeps the
            values' own scale (a 1–7 graded score: ``aligned_rate`` is then the mean score).
        binary: require 0/1 values (``False`` for graded scores).

    Returns:
        A :class:`RateComparison`.

    Raises:
        ValueError: mismatched lengths, values other than 0/1/NaN, or a bad reference.
    """
    q = np.asarray(cluster, dtype=np.int64)
    a = np.asarray(arm, dtype=np.int64)
    s = np.asarray(sample, dtype=np.int64)
    y_all = np.asarray(aligned, dtype=np.float64)
    names = tuple(arm_names)
    n_a = len(names)
    if not (q.shape == a.shape == s.shape == y_all.shape) or q.ndim != 1:
        raise ValueError("cluster, arm, sample and aligned must be 1-D and of equal length")
    if q.size == 0:
        raise ValueError("the table has no rows")
    if not 0 <= reference < n_a:
        raise ValueError("reference must be one of the arm codes")
    if a.min() < 0 or a.max() >= n_a:
        raise ValueError("arm codes must lie in 0..len(arm_names)-1")
    scored = ~np.isnan(y_all)
    if binary and not np.isin(y_all[scored], (0.0, 1.0)).all():
        raise ValueError("aligned must be 1, 0 or NaN")
    if not np.isfinite(y_all[scored]).all():
        raise ValueError("values must be finite or NaN")
    n_q = int(q.max()) + 1
    missing = np.bincount(a[~scored], minlength=n_a)
    q_s, a_s, s_s, y = q[scored], a[scored], s[scored], y_all[scored]

    # the two lowest samples of every arm for the null test
    pairs: list[tuple[int, int] | None] = []
    for j in range(n_a):
        codes = np.unique(s_s[a_s == j])
        pairs.append((int(codes[0]), int(codes[1])) if codes.size >= 2 else None)
    n_arm, k_arm = _cells(q_s, a_s, y, n_q, n_a)
    null_cols: list[NDArray[np.float64]] = []
    for j, pair in enumerate(pairs):
        if pair is None:
            continue
        for which in pair:
            m = (a_s == j) & (s_s == which)
            n_j = np.bincount(q_s[m], minlength=n_q).astype(np.float64)
            k_j = np.bincount(q_s[m], weights=y[m], minlength=n_q).astype(np.float64)
            null_cols += [n_j, k_j]
    cols = np.concatenate([n_arm, k_arm, *(c[:, None] for c in null_cols)], axis=1)
    sums = cluster_bootstrap_sums(cols, n_boot=n_boot, seed=seed, chunk=chunk)
    point = cols.sum(axis=0)

    def split(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Rates per arm and null differences (pp) from one row of sums (or a B × K block)."""
        rates = _ratio(x[..., n_a : 2 * n_a], x[..., :n_a])
        diffs = []
        off = 2 * n_a
        for pair in pairs:
            if pair is None:
                continue
            n0, k0, n1, k1 = (x[..., off + i] for i in range(4))
            diffs.append(scale * (_ratio(k0, n0) - _ratio(k1, n1)))
            off += 4
        stacked = np.stack(diffs, axis=-1) if diffs else np.empty((*x.shape[:-1], 0))
        return rates, stacked

    rate0, null0 = split(point)
    rate_b, null_b = split(sums)
    drift0 = scale * (rate0 - rate0[reference])
    drift_b = scale * (rate_b - rate_b[:, [reference]])

    informed = (n_arm > 0) & (n_arm[:, [reference]] > 0)
    n_stems = informed.sum(axis=0)
    others = [j for j in range(n_a) if j != reference]
    reps = drift_b[:, others]
    n_inf = n_stems[others].astype(np.float64) if expand else None
    lo, hi = _interval(reps, level, n_inf)
    plo, phi = _interval(reps, level, None)
    lo90, hi90 = _interval(reps, 0.90, n_inf)
    p = bootstrap_p_value(reps, 0.0, n_inf) if others else np.empty(0)
    with np.errstate(invalid="ignore"):
        se = np.nanstd(reps, axis=0, ddof=1) if n_boot > 1 else np.full(len(others), np.nan)
    c_a, c_b = critical_values(n_inf) if expand else critical_values(None)
    mdd_flat = np.broadcast_to(c_a + c_b, se.shape) * se
    mdd = mdd_flat
    if binary and scale > 0 and others:
        # the SE the MDD is built on, made median-unbiased per arm (its stems' kurtosis)
        se_mdd = se * np.array([_se_median_factor(n_arm, k_arm, reference, j) for j in others])
        varying = _mdd_varying(
            n_arm, k_arm, reference, others, drift0[others], se_mdd,
            np.broadcast_to(c_a, se.shape), np.broadcast_to(c_b, se.shape), scale,
        )  # fmt: skip
        if varying is not None:
            mdd = varying
    eq = equivalence_bound(lo90, hi90)

    nan = float("nan")
    arms: list[ArmDrift] = []
    for j in range(n_a):
        common: dict[str, Any] = {
            "aligned_rate": float(rate0[j]),
            "drift_pp": float(drift0[j]),
            "n_responses": int(n_arm[:, j].sum()),
            "n_missing": int(missing[j]),
        }
        if j == reference:
            arms.append(
                ArmDrift(
                    **common,
                    ci_low=nan,
                    ci_high=nan,
                    ci_plain_low=nan,
                    ci_plain_high=nan,
                    ci90_low=nan,
                    ci90_high=nan,
                    se=nan,
                    mdd=nan,
                    equivalence_bound=nan,
                    p_value=nan,
                    n_stems=int((n_arm[:, j] > 0).sum()),
                )
            )
            continue
        i = others.index(j)
        enough = n_stems[j] >= 2
        arms.append(
            ArmDrift(
                **common,
                ci_low=float(lo[i]) if enough else nan,
                ci_high=float(hi[i]) if enough else nan,
                ci_plain_low=float(plo[i]) if enough else nan,
                ci_plain_high=float(phi[i]) if enough else nan,
                ci90_low=float(lo90[i]) if enough else nan,
                ci90_high=float(hi90[i]) if enough else nan,
                se=float(se[i]) if enough else nan,
                mdd=float(mdd[i]) if enough else nan,
                mdd_constant_se=float(mdd_flat[i]) if enough else nan,
                equivalence_bound=float(eq[i]) if enough else nan,
                p_value=float(p[i]) if enough else nan,
                n_stems=int(n_stems[j]),
            )
        )

    # null test: stems that have both samples of the arm
    null: list[NullArm | None] = []
    tested = [j for j, pair in enumerate(pairs) if pair is not None]
    if tested:
        both = []
        off = 2 * n_a
        for _ in tested:
            both.append(((cols[:, off] > 0) & (cols[:, off + 2] > 0)).sum())
            off += 4
        n_null = np.asarray(both, dtype=np.float64)
        nlo, nhi = _interval(null_b, level, n_null if expand else None)
    for j in range(n_a):
        if j not in tested:
            null.append(None)
            continue
        i = tested.index(j)
        ok = n_null[i] >= 2
        null.append(
            NullArm(
                mean_diff_pp=float(null0[i]),
                ci_low=float(nlo[i]) if ok else nan,
                ci_high=float(nhi[i]) if ok else nan,
                n_stems=int(n_null[i]),
            )
        )
    return RateComparison(
        arm_names=names,
        reference=names[reference],
        arms=tuple(arms),
        null=tuple(null),
        n_boot=n_boot,
        expanded=expand,
    )


@dataclass(frozen=True)
class RateNoise:
    """Shares of the variance of aligned indicators (Table B1 shape); NaN when not separable.

    ``classifier``: the same response scored twice; ``model``: the same probe sampled twice;
    ``between_stem``: real differences between probes/stems, including their interaction
    with the arm — split into ``probe_main`` (a probe's own level, the same in every arm)
    and ``probe_by_arm`` (how far an arm's level on a probe departs from that). The three
    shares above sum to 1, and so do classifier, model, probe_main and probe_by_arm.

    A paired drift (an arm minus the reference on the same probes) does not feel
    ``probe_main``: it cancels in the difference (20-41 % of the variance in a seed-like
    study, which made the classifier's share read 0.32 where the seed reports 2-16 %).
    ``paired_*`` are the shares of what a paired drift does feel: classifier, model and
    probe-by-arm, summing to 1.
    """

    classifier: float
    model: float
    between_stem: float
    probe_main: float = float("nan")
    probe_by_arm: float = float("nan")
    paired_classifier: float = float("nan")
    paired_model: float = float("nan")
    paired_probe_by_arm: float = float("nan")


def rate_noise(
    aligned: ArrayLike,
    probe: ArrayLike,
    arm: ArrayLike,
    sample: ArrayLike,
    repeat: ArrayLike | None = None,
) -> RateNoise:
    """Noise shares of scored rows (NaN rows dropped) via the nested decomposition.

    The cell is (probe, arm): its samples are the model's noise and the classifier repeats
    of one response the classifier's; what remains between probes is the real spread.

    Args:
        aligned: ``(N,)`` 1/0/NaN indicators (all classifier repeats included).
        probe: ``(N,)`` probe codes (unique across stems).
        arm, sample: ``(N,)`` codes.
        repeat: ``(N,)`` classifier-repeat codes (0 = first scoring) or ``None``.
    """
    y = np.asarray(aligned, dtype=np.float64)
    ok = ~np.isnan(y)
    nan = float("nan")
    if ok.sum() < 3:
        return RateNoise(nan, nan, nan)
    rep = None if repeat is None else np.asarray(repeat, dtype=np.int64)[ok]
    if rep is not None and np.unique(rep).size < 2:
        rep = None
    dec = noise_decomposition(
        y[ok],
        np.asarray(probe, dtype=np.int64)[ok],
        np.asarray(arm, dtype=np.int64)[ok],
        np.asarray(sample, dtype=np.int64)[ok],
        rep,
    )
    parts = {
        "classifier": dec.labeler,
        "model": dec.model,
        "between_stem": (
            np.nansum([dec.between_question, dec.question_condition])
            if np.isfinite(dec.between_question) or np.isfinite(dec.question_condition)
            else nan
        ),
    }
    total = sum(v for v in parts.values() if np.isfinite(v))

    def share(v: float, of: float) -> float:
        return float(v / of) if of > 0 and np.isfinite(v) else nan

    shares = {k: share(v, total) for k, v in parts.items()}
    felt = {
        "classifier": dec.labeler,
        "model": dec.model,
        "probe_by_arm": dec.question_condition,
    }
    felt_total = sum(v for v in felt.values() if np.isfinite(v))
    return RateNoise(
        **shares,
        probe_main=share(dec.between_question, total),
        probe_by_arm=share(dec.question_condition, total),
        **{f"paired_{k}": share(v, felt_total) for k, v in felt.items()},
    )
