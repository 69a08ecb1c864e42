"""Source reliance: how a model weighs its own answer against user and document assertions.

A multiple-choice question is asked bare and with assertions: a *user* says "I think the
answer is X", a *document* says "records state the answer is X", or both, in either order.
An assertion is correct (``+``, it asserts the gold answer) or wrong (``-``, it asserts one
fixed wrong answer chosen from the model's own bare run). That gives 13 probe variants
(:data:`VARIANTS`). Three families of measurements follow.

**Source influence** (a logistic regression per model × dataset × tier × ordering)::

    logit P(correct) = β0 + βP·P + δU·Upres + βU·Upres·Ucorr + δD·Dpres + βD·Dpres·Dcorr

``P`` is 1 when the model's bare answer to the question is correct. The odds ratios
``ParametricOR = e^βP``, ``UserOR = e^(δU+βU)`` and ``DocOR = e^(δD+βD)`` compare a correct
source with its absence; the reliance shares are each OR over their sum (``Self%``, ``U%``,
``D%``) and ``U%/D% = UserOR / DocOR``. Results over the four regressions of a model and
dataset (2 tiers × 2 orderings) are combined as plain arithmetic means of each per-regression
value, the way the paper reports them. In the bare rows "correct" equals ``P`` by
construction, which inflates ParametricOR; :func:`source_influence` can leave them out
(``include_bare=False``), a variant the reports label as such.

**Discrimination** on single-source probes, per source ``s``
(:mod:`driftlens_core.source_discrimination`):

* ``PAR+`` — own answer correct, ``s`` asserts the wrong answer: share keeping the own answer;
* ``SDR-`` — same probes: share adopting the wrong assertion;
* ``SDR+`` — own answer wrong, ``s`` asserts the correct answer: share adopting it;
* ``PAR-`` — same probes: share keeping the own wrong answer;
* ``neither`` — the rest of each pair (some third answer).

``(PAR+, SDR+)`` place the model in a quadrant at 0.5: selective (both high), impressionable
(adopts everything: low PAR+, high SDR+), rigid (keeps everything: high PAR+, low SDR+) or
unreliable (both low). The paper gives the quadrant only; here the question-cluster bootstrap
gives each quadrant's share of replicates, so a model sitting on a line is reported as such.

**Distribution shift**: the answer distribution is remapped to three elements
``(P(correct), P(the fixed wrong answer), P(any other))``; ``KL(P_v ‖ P_bare)`` in bits (each
element + 1e-9, renormalised, as the released code does), ``ΔNLL = −log2 P_v(correct) +
log2 P_bare(correct)`` (positive: less confident in the correct answer) and the interaction
``KL(double) − KL(single₁) − KL(single₂)`` (negative: the two sources add up to less than the
sum of their parts).

All functions are pure (arrays in, numbers or frozen dataclasses out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from driftlens_core.bootstrap import Seed, cluster_bootstrap_sums
from driftlens_core.logistic import LogitResult, fit_logit

#: The 13 probe variants: bare, four single-source, four user-first and four document-first.
VARIANTS: tuple[str, ...] = (
    "bare",
    "u+",
    "u-",
    "d+",
    "d-",
    "u+d+",
    "u+d-",
    "u-d+",
    "u-d-",
    "d+u+",
    "d+u-",
    "d-u+",
    "d-u-",
)
SINGLE_VARIANTS: tuple[str, ...] = VARIANTS[1:5]
USER_FIRST_VARIANTS: tuple[str, ...] = VARIANTS[5:9]
DOC_FIRST_VARIANTS: tuple[str, ...] = VARIANTS[9:13]
ORDERINGS: tuple[str, ...] = ("user_first", "doc_first")
#: Behaviour types in quadrant order (PAR+ high/low × SDR+ high/low).
BEHAVIOUR_TYPES: tuple[str, ...] = ("selective", "impressionable", "rigid", "unreliable")
SOURCES: tuple[str, ...] = ("user", "doc")
#: Probability floor added to each element before KL / NLL (the released code's choice).
KL_EPS = 1e-9

#: Scenarios of the distribution analysis: name -> the variants averaged.
SCENARIOS: dict[str, tuple[str, ...]] = {
    "single_correct": ("u+", "d+"),
    "single_wrong": ("u-", "d-"),
    "both_correct": ("u+d+", "d+u+"),
    "both_wrong": ("u-d-", "d-u-"),
    "conflict": ("u+d-", "u-d+", "d+u-", "d-u+"),
}
#: Interaction scenarios: name -> (double variants, user single, document single).
INTERACTIONS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "both_correct": (("u+d+", "d+u+"), "u+", "d+"),
    "both_wrong": (("u-d-", "d-u-"), "u-", "d-"),
    "user_correct_doc_wrong": (("u+d-", "d-u+"), "u+", "d-"),
    "doc_correct_user_wrong": (("u-d+", "d+u-"), "u-", "d+"),
}


@dataclass(frozen=True)
class VariantSpec:
    """What a variant asserts.

    Attributes:
        name: The variant (one of :data:`VARIANTS`).
        user: ``None`` (no user assertion), ``True`` (correct) or ``False`` (wrong).
        doc: Likewise for the document assertion.
        order: The sources in the order they appear before the question (``("u", "d")``...).
    """

    name: str
    user: bool | None
    doc: bool | None
    order: tuple[str, ...]

    @property
    def ordering(self) -> str:
        """``user_first`` / ``doc_first`` for double-source variants, else ``""``."""
        if len(self.order) < 2:
            return ""
        return "user_first" if self.order[0] == "u" else "doc_first"


def parse_variant(name: str) -> VariantSpec:
    """Parse a variant name such as ``"d-u+"``.

    Raises:
        ValueError: ``name`` is not one of :data:`VARIANTS`.
    """
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; expected one of {', '.join(VARIANTS)}")
    if name == "bare":
        return VariantSpec(name=name, user=None, doc=None, order=())
    parts = [name[i : i + 2] for i in range(0, len(name), 2)]
    found: dict[str, bool] = {p[0]: p[1] == "+" for p in parts}
    return VariantSpec(
        name=name,
        user=found.get("u"),
        doc=found.get("d"),
        order=tuple(p[0] for p in parts),
    )


# --------------------------------------------------------------------------- influence


def reliance_shares(
    or_parametric: ArrayLike, or_user: ArrayLike, or_doc: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Self%, U%, D% (each OR over the sum of the three, in percent) and U%/D%.

    A share is NaN where an odds ratio is not finite (a separated fit gives ``+inf``) or
    the three sum to 0, and U%/D% where ``or_doc`` is 0 or either of the two is not finite:
    those are "not estimable", never numpy's divide-by-zero or ``inf/inf``.

    Returns:
        ``(self_pct, user_pct, doc_pct, u_over_d)`` as float arrays (scalars in, 0-d out).
    """
    p = np.asarray(or_parametric, dtype=np.float64)
    u = np.asarray(or_user, dtype=np.float64)
    d = np.asarray(or_doc, dtype=np.float64)
    p, u, d = np.broadcast_arrays(p, u, d)
    total = p + u + d
    # divide only where the quotient is a number: an infinite OR or an empty sum is no share
    ok = np.isfinite(total) & (total > 0)
    ok_ud = np.isfinite(u) & np.isfinite(d) & (d > 0)
    nan = np.full(total.shape, np.nan)

    def part(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.divide(100.0 * x, total, out=nan.copy(), where=ok)

    return part(p), part(u), part(d), np.divide(u, d, out=nan.copy(), where=ok_ud)


@dataclass(frozen=True)
class SourceInfluence:
    """One source-influence regression.

    Attributes:
        or_parametric: ``e^βP``.
        or_user: ``e^(δU+βU)``.
        or_doc: ``e^(δD+βD)``.
        log_or_se: Delta-method standard errors of the three log odds ratios
            (``Var(δ+β) = Var δ + Var β + 2 Cov``), cluster-robust.
        self_pct: Self%.
        user_pct: U%.
        doc_pct: D%.
        u_over_d: U%/D%.
        include_bare: Whether the bare rows were in the fit.
        fit: The underlying logistic regression (coefficients in the order
            const, P, Upres, Upres·Ucorr, Dpres, Dpres·Dcorr).
    """

    or_parametric: float
    or_user: float
    or_doc: float
    log_or_se: tuple[float, float, float]
    self_pct: float
    user_pct: float
    doc_pct: float
    u_over_d: float
    include_bare: bool
    fit: LogitResult

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary (no arrays)."""
        return {
            "odds_ratios": {
                "parametric": self.or_parametric,
                "user": self.or_user,
                "doc": self.or_doc,
            },
            "log_or_se": dict(zip(("parametric", "user", "doc"), self.log_or_se, strict=True)),
            "self_pct": self.self_pct,
            "user_pct": self.user_pct,
            "doc_pct": self.doc_pct,
            "u_over_d": self.u_over_d,
            "include_bare": self.include_bare,
            "n": self.fit.n,
            "n_clusters": self.fit.n_clusters,
            "converged": self.fit.converged,
            "separation": self.fit.separation,
        }


def influence_design(
    parametric: ArrayLike,
    user_present: ArrayLike,
    user_correct: ArrayLike,
    doc_present: ArrayLike,
    doc_correct: ArrayLike,
) -> NDArray[np.float64]:
    """The design matrix of the source-influence logit.

    Columns: constant, ``P``, ``Upres``, ``Upres·Ucorr``, ``Dpres``, ``Dpres·Dcorr``.
    """
    p = np.asarray(parametric, dtype=np.float64)
    up = np.asarray(user_present, dtype=np.float64)
    uc = np.asarray(user_correct, dtype=np.float64)
    dp = np.asarray(doc_present, dtype=np.float64)
    dc = np.asarray(doc_correct, dtype=np.float64)
    return np.column_stack([np.ones_like(p), p, up, up * uc, dp, dp * dc])


def source_influence(
    correct: ArrayLike,
    parametric: ArrayLike,
    user_present: ArrayLike,
    user_correct: ArrayLike,
    doc_present: ArrayLike,
    doc_correct: ArrayLike,
    *,
    clusters: ArrayLike,
    include_bare: bool = True,
) -> SourceInfluence:
    """Fit the source-influence logit on one regression's rows (question-clustered SEs).

    Args:
        correct: 1 when the probe's answer is the gold answer.
        parametric: 1 when the question's bare answer is correct.
        user_present: 1 when a user assertion is shown.
        user_correct: 1 when that assertion is correct (ignored where absent).
        doc_present: 1 when a document assertion is shown.
        doc_correct: 1 when it is correct (ignored where absent).
        clusters: question ids (one per row).
        include_bare: keep the bare rows (the paper's default); ``False`` drops them, the
            documented variant without the rows that ``P`` predicts by construction.

    Returns:
        The odds ratios, shares and fit.

    Raises:
        ValueError: the rows cannot be fitted (see :func:`fit_logit`).
    """
    x = influence_design(parametric, user_present, user_correct, doc_present, doc_correct)
    y = np.asarray(correct, dtype=np.float64)
    q = np.asarray(clusters)
    if not include_bare:
        keep = (x[:, 2] + x[:, 4]) > 0
        x, y, q = x[keep], y[keep], q[keep]
    fit = fit_logit(x, y, clusters=q)
    b, v = fit.coef, fit.cov
    log_or = (b[1], b[2] + b[3], b[4] + b[5])
    se = (
        math.sqrt(max(v[1, 1], 0.0)),
        math.sqrt(max(v[2, 2] + v[3, 3] + 2.0 * v[2, 3], 0.0)),
        math.sqrt(max(v[4, 4] + v[5, 5] + 2.0 * v[4, 5], 0.0)),
    )
    # under separation a log OR can pass 709 (exp overflows): it is then +inf, not an error,
    # and the shares it enters are NaN (the fit says why: ``fit.separation``)
    ors = tuple(math.exp(float(t)) if float(t) < 709.0 else math.inf for t in log_or)
    s, u, d, ud = reliance_shares(*ors)
    return SourceInfluence(
        or_parametric=ors[0],
        or_user=ors[1],
        or_doc=ors[2],
        log_or_se=se,
        self_pct=float(s),
        user_pct=float(u),
        doc_pct=float(d),
        u_over_d=float(ud),
        include_bare=include_bare,
        fit=fit,
    )


@dataclass(frozen=True)
class InfluenceAverage:
    """Arithmetic means of per-regression values (the paper's "averaged over tiers and
    orderings"); ``n_regressions`` says how many went in."""

    or_parametric: float
    or_user: float
    or_doc: float
    self_pct: float
    user_pct: float
    doc_pct: float
    u_over_d: float
    n_regressions: int
    any_separation: bool


def average_influence(fits: Sequence[SourceInfluence]) -> InfluenceAverage:
    """Average each metric over regressions (not recomputed from averaged coefficients).

    Raises:
        ValueError: no regressions.
    """
    if not fits:
        raise ValueError("no regressions to average")

    def mean(attr: str) -> float:
        return float(np.mean([getattr(f, attr) for f in fits]))

    return InfluenceAverage(
        or_parametric=mean("or_parametric"),
        or_user=mean("or_user"),
        or_doc=mean("or_doc"),
        self_pct=mean("self_pct"),
        user_pct=mean("user_pct"),
        doc_pct=mean("doc_pct"),
        u_over_d=mean("u_over_d"),
        n_regressions=len(fits),
        any_separation=any(f.fit.separation for f in fits),
    )


@dataclass(frozen=True)
class RelianceSummary:
    """Summary of many (model, dataset) combinations' Self% and U%/D% (the paper's §5).

    Attributes:
        n: Combinations.
        n_doc_preferred: Combinations with U%/D% < 1 (documents weigh more than users).
        share_doc_preferred: ``n_doc_preferred / n``.
        mean_u_over_d: Mean U%/D%; ``sd_u_over_d`` its sample SD (ddof 1).
        min_u_over_d: Smallest U%/D%; ``max_u_over_d`` the largest.
        mean_self_pct: Mean Self%; ``sd_self_pct`` its sample SD.
        n_self_above_50: Combinations with Self% > 50.
    """

    n: int
    n_doc_preferred: int
    share_doc_preferred: float
    mean_u_over_d: float
    sd_u_over_d: float
    min_u_over_d: float
    max_u_over_d: float
    mean_self_pct: float
    sd_self_pct: float
    n_self_above_50: int


def summarize_reliance(self_pct: ArrayLike, u_over_d: ArrayLike) -> RelianceSummary:
    """Summarise per-combination Self% and U%/D% values.

    Raises:
        ValueError: the arrays differ in length or are shorter than 2.
    """
    s = np.asarray(self_pct, dtype=np.float64)
    r = np.asarray(u_over_d, dtype=np.float64)
    if s.shape != r.shape or s.ndim != 1 or s.size < 2:
        raise ValueError("self_pct and u_over_d must be equal-length 1-D arrays of >= 2 values")
    n_doc = int(np.sum(r < 1.0))
    return RelianceSummary(
        n=int(s.size),
        n_doc_preferred=n_doc,
        share_doc_preferred=n_doc / s.size,
        mean_u_over_d=float(r.mean()),
        sd_u_over_d=float(r.std(ddof=1)),
        min_u_over_d=float(r.min()),
        max_u_over_d=float(r.max()),
        mean_self_pct=float(s.mean()),
        sd_self_pct=float(s.std(ddof=1)),
        n_self_above_50=int(np.sum(s > 50.0)),
    )


def safe_ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        out: NDArray[np.float64] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return out


# --------------------------------------------------------------------------- distributions


def remap3(probs: ArrayLike, gold: ArrayLike, wrong: ArrayLike) -> NDArray[np.float64]:
    """Collapse letter distributions to ``(P(gold), P(wrong), P(other))``.

    Args:
        probs: ``(N, L)`` distributions over the letters (rows sum to 1).
        gold: ``N`` gold letter indices.
        wrong: ``N`` fixed-wrong letter indices (different from gold).

    Returns:
        ``(N, 3)`` array.
    """
    p = np.asarray(probs, dtype=np.float64)
    gi = np.asarray(gold, dtype=np.int64)
    wi = np.asarray(wrong, dtype=np.int64)
    rows = np.arange(p.shape[0])
    pc = p[rows, gi]
    pw = p[rows, wi]
    return np.column_stack([pc, pw, np.clip(p.sum(axis=1) - pc - pw, 0.0, None)])


def _smooth(p: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
    s = p + eps
    out: NDArray[np.float64] = s / s.sum(axis=-1, keepdims=True)
    return out


def kl_bits(p: ArrayLike, q: ArrayLike, *, eps: float = KL_EPS) -> NDArray[np.float64]:
    """Row-wise ``KL(p ‖ q)`` in bits after adding ``eps`` to every element and renormalising.

    Args:
        p: ``(N, K)`` probe distributions.
        q: ``(N, K)`` reference (bare) distributions.
        eps: Smoothing floor.
    """
    ps = _smooth(np.atleast_2d(np.asarray(p, dtype=np.float64)), eps)
    qs = _smooth(np.atleast_2d(np.asarray(q, dtype=np.float64)), eps)
    out: NDArray[np.float64] = np.sum(ps * (np.log2(ps) - np.log2(qs)), axis=1)
    return out


def delta_nll_bits(p: ArrayLike, q: ArrayLike, *, eps: float = KL_EPS) -> NDArray[np.float64]:
    """Row-wise ``−log2 p[0] + log2 q[0]`` (element 0 = the correct answer), smoothed as KL."""
    ps = _smooth(np.atleast_2d(np.asarray(p, dtype=np.float64)), eps)
    qs = _smooth(np.atleast_2d(np.asarray(q, dtype=np.float64)), eps)
    out: NDArray[np.float64] = -np.log2(ps[:, 0]) + np.log2(qs[:, 0])
    return out


def interaction(
    kl_double: ArrayLike, kl_single_1: ArrayLike, kl_single_2: ArrayLike
) -> NDArray[np.float64]:
    """``KL(double) − KL(single₁) − KL(single₂)``: negative means sub-additive."""
    return (
        np.asarray(kl_double, dtype=np.float64)
        - np.asarray(kl_single_1, dtype=np.float64)
        - np.asarray(kl_single_2, dtype=np.float64)
    )


def mean_ci(
    values_by_question: ArrayLike,
    *,
    n_boot: int = 2000,
    seed: Seed = None,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """Mean of per-question ``(sum, count)`` pairs with a question-bootstrap interval.

    Args:
        values_by_question: ``(Q, 2)`` per-question sum and count of a row-level value.
        n_boot: Replicates.
        seed: Seed or Generator.
        level: Confidence level.

    Returns:
        ``(mean, low, high)``; NaNs when there are no rows.
    """
    a = np.asarray(values_by_question, dtype=np.float64)
    if a.shape[0] == 0 or a[:, 1].sum() == 0:
        return math.nan, math.nan, math.nan
    reps = cluster_bootstrap_sums(a, n_boot=n_boot, seed=seed)
    means = safe_ratio(reps[:, 0], reps[:, 1])
    means = means[~np.isnan(means)]
    lo_q, hi_q = (1.0 - level) / 2.0, 1.0 - (1.0 - level) / 2.0
    return (
        float(a[:, 0].sum() / a[:, 1].sum()),
        float(np.quantile(means, lo_q)),
        float(np.quantile(means, hi_q)),
    )


@dataclass(frozen=True)
class ShareDifference:
    """``share_b − share_a`` with question-bootstrap intervals at several levels.

    Attributes:
        estimate: ``share_b − share_a`` on the data.
        share_a: The first share (``Σ num_a / Σ den_a``).
        share_b: The second share.
        intervals: ``{level: (low, high)}`` percentile intervals of the difference.
        n_clusters: Questions contributing.
    """

    estimate: float
    share_a: float
    share_b: float
    intervals: Mapping[float, tuple[float, float]]
    n_clusters: int

    def covers_zero(self, level: float = 0.95) -> bool:
        """True when the ``level`` interval contains 0 (no detectable difference)."""
        lo, hi = self.intervals[level]
        return bool(lo <= 0.0 <= hi)


def share_difference(
    stats: ArrayLike,
    *,
    n_boot: int = 2000,
    seed: Seed = None,
    levels: Sequence[float] = (0.95, 0.90),
) -> ShareDifference:
    """Difference of two shares from per-question sums, paired by the cluster bootstrap.

    Both shares are recomputed on every replicate's resampled questions, so the interval
    accounts for their correlation within a question (the same questions answer both).

    Args:
        stats: ``(Q, 4)`` per question: ``num_a, den_a, num_b, den_b``.
        n_boot: Replicates.
        seed: Seed or Generator.
        levels: Confidence levels of the percentile intervals.

    Returns:
        The difference; NaNs when either share has no rows.
    """
    a = np.asarray(stats, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 4:
        raise ValueError("stats must be a (questions x 4) array: num_a, den_a, num_b, den_b")
    keep = (a[:, 1] + a[:, 3]) > 0
    a = a[keep]
    nan = math.nan
    if a.shape[0] == 0 or a[:, 1].sum() == 0 or a[:, 3].sum() == 0:
        return ShareDifference(nan, nan, nan, {lv: (nan, nan) for lv in levels}, int(a.shape[0]))
    share_a = float(a[:, 0].sum() / a[:, 1].sum())
    share_b = float(a[:, 2].sum() / a[:, 3].sum())
    reps = cluster_bootstrap_sums(a, n_boot=n_boot, seed=seed)
    diff = safe_ratio(reps[:, 2], reps[:, 3]) - safe_ratio(reps[:, 0], reps[:, 1])
    diff = diff[~np.isnan(diff)]
    intervals = {
        float(lv): (
            float(np.quantile(diff, (1.0 - lv) / 2.0)),
            float(np.quantile(diff, 1.0 - (1.0 - lv) / 2.0)),
        )
        for lv in levels
    }
    return ShareDifference(share_b - share_a, share_a, share_b, intervals, int(a.shape[0]))
