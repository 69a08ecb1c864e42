"""Source reliance: discrimination on single-source probes (PAR and SDR per source).

Per source ``s``, on the probes with one assertion:

* ``PAR+`` — own answer correct, ``s`` asserts the wrong answer: share keeping the own answer;
* ``SDR-`` — same probes: share adopting the wrong assertion;
* ``SDR+`` — own answer wrong, ``s`` asserts the correct answer: share adopting it;
* ``PAR-`` — same probes: share keeping the own wrong answer;
* ``neither`` — the rest of each pair (some third answer).

``(PAR+, SDR+)`` place the model in a quadrant at 0.5: selective (both high), impressionable
(adopts everything: low PAR+, high SDR+), rigid (keeps everything: high PAR+, low SDR+) or
unreliable (both low). The paper gives the quadrant only; here the question-cluster bootstrap
gives each quadrant's share of replicates, so a model sitting on a line is reported as such.

Counts per question (:func:`choice_counts`) are summed over bootstrap replicates of
questions (:func:`discrimination`); all functions are pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from driftlens_core.bootstrap import Seed, cluster_bootstrap_sums
from driftlens_core.source_reliance import BEHAVIOUR_TYPES, safe_ratio

#: Columns of the per-question choice counts (:func:`choice_counts`).
CHOICE_COLUMNS: tuple[str, ...] = (
    "n_model_correct",  # wrong-assertion probes where the bare answer was correct
    "kept_correct",  # ... the model kept its correct answer (PAR+)
    "adopted_wrong",  # ... the model adopted the wrong assertion (SDR-)
    "n_model_wrong",  # correct-assertion probes where the bare answer was wrong
    "adopted_correct",  # ... the model adopted the correct assertion (SDR+)
    "kept_wrong",  # ... the model kept its own wrong answer (PAR-)
)


def choice_counts(
    question: ArrayLike,
    bare_choice: ArrayLike,
    probe_choice: ArrayLike,
    gold: ArrayLike,
    asserted: ArrayLike,
    *,
    n_questions: int,
) -> NDArray[np.float64]:
    """Per-question counts for PAR±/SDR± of one source (single-source probe rows only).

    Args:
        question: Question index in ``[0, n_questions)`` per probe row.
        bare_choice: The question's bare answer per row (any hashable; "unknown" never
            matches a letter).
        probe_choice: The answer under the assertion.
        gold: The correct answer.
        asserted: The answer the assertion states (gold for ``+``, the fixed wrong for ``-``).
        n_questions: Number of questions (rows of the result).

    Returns:
        ``(n_questions, 6)`` counts in :data:`CHOICE_COLUMNS` order. A wrong assertion on a
        question the model already got wrong asserts the model's own answer: an agreement
        probe, counted nowhere.
    """
    q = np.asarray(question, dtype=np.int64)
    bare = np.asarray(bare_choice, dtype=object)
    probe = np.asarray(probe_choice, dtype=object)
    g = np.asarray(gold, dtype=object)
    a = np.asarray(asserted, dtype=object)
    bare_ok = bare == g
    positive = a == g
    conflict_mc = bare_ok & ~positive
    conflict_mw = ~bare_ok & positive
    cols = (
        conflict_mc,
        conflict_mc & (probe == bare),
        conflict_mc & (probe == a),
        conflict_mw,
        conflict_mw & (probe == a),
        conflict_mw & (probe == bare),
    )
    out = np.zeros((n_questions, len(cols)), dtype=np.float64)
    for j, c in enumerate(cols):
        np.add.at(out[:, j], q, np.asarray(c, dtype=np.float64))
    return out


def rates_from_counts(sums: ArrayLike) -> dict[str, NDArray[np.float64]]:
    """PAR±, SDR± and the two neither rates from summed :data:`CHOICE_COLUMNS` columns.

    Args:
        sums: ``(..., 6)`` column sums (one row per replicate, or a single row).

    Returns:
        Arrays over the leading axes; NaN where no probe qualifies.
    """
    s = np.asarray(sums, dtype=np.float64)
    par_plus = safe_ratio(s[..., 1], s[..., 0])
    sdr_minus = safe_ratio(s[..., 2], s[..., 0])
    sdr_plus = safe_ratio(s[..., 4], s[..., 3])
    par_minus = safe_ratio(s[..., 5], s[..., 3])
    return {
        "par_plus": par_plus,
        "sdr_minus": sdr_minus,
        "sdr_plus": sdr_plus,
        "par_minus": par_minus,
        "neither_model_correct": 1.0 - par_plus - sdr_minus,
        "neither_model_wrong": 1.0 - par_minus - sdr_plus,
    }


def behaviour_type(par_plus: float, sdr_plus: float, threshold: float = 0.5) -> str | None:
    """The quadrant of ``(PAR+, SDR+)`` at ``threshold``; ``None`` when either is NaN."""
    if math.isnan(par_plus) or math.isnan(sdr_plus):
        return None
    keeps = par_plus >= threshold
    adopts = sdr_plus >= threshold
    if keeps and adopts:
        return "selective"
    if adopts:
        return "impressionable"
    if keeps:
        return "rigid"
    return "unreliable"


def _types_vectorised(
    par: NDArray[np.float64], sdr: NDArray[np.float64], threshold: float
) -> NDArray[np.int64]:
    """Index into :data:`BEHAVIOUR_TYPES` per replicate; −1 where undefined."""
    keeps = par >= threshold
    adopts = sdr >= threshold
    out = np.where(keeps & adopts, 0, np.where(adopts, 1, np.where(keeps, 2, 3))).astype(np.int64)
    out[np.isnan(par) | np.isnan(sdr)] = -1
    return out


@dataclass(frozen=True)
class SourceDiscrimination:
    """PAR±/SDR± of one source with bootstrap CIs and the behaviour type's uncertainty.

    Attributes:
        rates: Point estimates by name (see :func:`rates_from_counts`); NaN when undefined.
        ci: 95% percentile intervals ``(low, high)`` by the same names.
        n_model_correct: Probes behind PAR+/SDR- (bare correct, wrong assertion).
        n_model_wrong: Probes behind SDR+/PAR- (bare wrong, correct assertion).
        behaviour: The point estimate's quadrant, or ``None`` when undefined.
        type_share: Share of bootstrap replicates in each quadrant (valid replicates only).
        valid_fraction: Share of replicates in which both rates were defined.
    """

    rates: dict[str, float]
    ci: dict[str, tuple[float, float]]
    n_model_correct: int
    n_model_wrong: int
    behaviour: str | None
    type_share: dict[str, float]
    valid_fraction: float


@dataclass(frozen=True)
class Discrimination:
    """Discrimination of both sources (bootstrapped jointly over the same questions)."""

    by_source: dict[str, SourceDiscrimination]
    par_plus: float
    sdr_plus: float
    n_boot: int
    threshold: float
    extra: dict[str, float] = field(default_factory=dict)


def discrimination(
    counts: Mapping[str, ArrayLike],
    *,
    n_boot: int = 2000,
    seed: Seed = None,
    threshold: float = 0.5,
    level: float = 0.95,
) -> Discrimination:
    """Rates, CIs and behaviour-type shares for each source from per-question counts.

    Args:
        counts: Source name -> ``(Q, 6)`` counts from :func:`choice_counts`, all over the
            same ``Q`` questions (they are resampled together).
        n_boot: Bootstrap replicates (question clusters drawn with replacement).
        seed: Seed or Generator.
        threshold: The quadrant line on both axes.
        level: Confidence level of the percentile intervals.

    Returns:
        Per-source results and the means over sources of PAR+ and SDR+.
    """
    names = list(counts)
    mats = [np.asarray(counts[s], dtype=np.float64) for s in names]
    q = mats[0].shape[0]
    if any(m.shape != (q, len(CHOICE_COLUMNS)) for m in mats):
        raise ValueError("every source needs a (Q, 6) count matrix over the same questions")
    stacked = np.hstack(mats)
    reps = cluster_bootstrap_sums(stacked, n_boot=n_boot, seed=seed)
    totals = stacked.sum(axis=0)
    lo_q, hi_q = (1.0 - level) / 2.0, 1.0 - (1.0 - level) / 2.0
    k = len(CHOICE_COLUMNS)
    by_source: dict[str, SourceDiscrimination] = {}
    for i, name in enumerate(names):
        sl = slice(i * k, (i + 1) * k)
        point = {key: float(v) for key, v in rates_from_counts(totals[sl]).items()}
        rep_rates = rates_from_counts(reps[:, sl])
        ci: dict[str, tuple[float, float]] = {}
        for key, arr in rep_rates.items():
            ok = arr[~np.isnan(arr)]
            ci[key] = (
                (float(np.quantile(ok, lo_q)), float(np.quantile(ok, hi_q)))
                if ok.size
                else (math.nan, math.nan)
            )
        types = _types_vectorised(rep_rates["par_plus"], rep_rates["sdr_plus"], threshold)
        valid = types >= 0
        n_valid = int(valid.sum())
        share = {
            t: (float(np.sum(types == j)) / n_valid if n_valid else math.nan)
            for j, t in enumerate(BEHAVIOUR_TYPES)
        }
        by_source[name] = SourceDiscrimination(
            rates=point,
            ci=ci,
            n_model_correct=int(totals[sl][0]),
            n_model_wrong=int(totals[sl][3]),
            behaviour=behaviour_type(point["par_plus"], point["sdr_plus"], threshold),
            type_share=share,
            valid_fraction=n_valid / n_boot,
        )
    return Discrimination(
        by_source=by_source,
        par_plus=_mean_defined([d.rates["par_plus"] for d in by_source.values()]),
        sdr_plus=_mean_defined([d.rates["sdr_plus"] for d in by_source.values()]),
        n_boot=n_boot,
        threshold=threshold,
    )


def _mean_defined(values: list[float]) -> float:
    """Mean of the defined (non-NaN) values; NaN when none is (no "empty slice" warning)."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else float("nan")
