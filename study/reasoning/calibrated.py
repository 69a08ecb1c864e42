"""Reasoning drift net of labeler error: DTW and SRI calibrated by human step labels (PPI++).

The LLM labeler labels every step of every response; drift (DTW, SRI) of each compared
pair is computed from those labels (:mod:`study.reasoning.drift`). A labeler that confuses
two leaves changes the distances themselves, so the model-only mean drift of a condition is
centred on what *that labeler* sees. People label the steps of a slice of questions (the
``label_check`` study: a Yes keeps the LLM's leaf, a No gives the annotators' better leaf);
on that slice the same pair's drift is computed again from the human leaves. Each compared
pair is an item with a model value ``f`` (drift from LLM labels) and, on the slice, a
human value ``Y`` (drift from human labels), clustered by question:

* per model, metric and condition, :func:`driftlens_core.ppi.ppi_mean_jackknife` gives the
  calibrated mean drift beside the model-only one (:func:`~driftlens_core.ppi.ppi_mean`, λ 0);
* per model, metric and condition (other than the noise conditions), the paired difference
  from the noise floor (the pooled rows of the ``noise`` conditions, the numerator of
  d_rel), :func:`~driftlens_core.ppi.ppi_difference_jackknife`, with both arms' items summed per
  question so the pairing is in the variance.

The slice is drawn by question (``annotate push label_check --select run=… --select
unit=question --select limit=K``): every step of every response of a drawn question is a
task, and each task stores the probability ``K / Q`` that its question was drawn (the
inverse-probability weight). A pair is human-labelled only when *every* step of both its
trajectories has a human leaf (an Unsure or an undecided vote leaves the pair out and is
counted).

The statistic runs on plain tables (:func:`human_drift_rows`, :func:`calibrate_drift`):
the drift table (``drift.csv``) and a table of human step labels; :func:`calibrated_drift`
reads the second from the workspace. The headline is the calibrated estimate when at least
:data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` questions carry a human-labelled pair, the
model-only one otherwise, with one sentence saying why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from sqlmodel import Session

from driftlens_core import pair_drift
from driftlens_core.ppi import (
    MIN_HUMAN_LABELS,
    PPIArm,
    PPIEstimate,
    ppi_difference,
    ppi_difference_jackknife,
    ppi_mean,
    ppi_mean_jackknife,
)
from storage.models import BASELINE_CONDITION
from study.json_values import json_ready

STUDY = "label_check"
METRICS: tuple[str, ...] = ("dtw", "sri")
#: The columns of the human step-label table (one row per human-labelled step).
STEP_COLUMNS: tuple[str, ...] = (
    "model",
    "question_id",
    "condition",
    "sample",
    "step_index",
    "leaf",
    "inclusion_probability",
)
#: ``what`` of a paired difference from the noise floor.
VS_NOISE = "vs_noise"
Headline = Literal["calibrated", "model-only"]


@dataclass(frozen=True)
class HumanDrift:
    """Drift of the compared pairs recomputed from human step labels.

    Attributes:
        rows: ``model, question_id, condition, sample, <metrics>, inclusion_probability``,
            one row per pair whose every step (both trajectories) has a human leaf.
        incomplete: Pairs of slice questions left out because a step has no human leaf.
        unmatched: Human-labelled responses that are not in the drift table (never
            labelled by the LLM labeler, or not compared).
    """

    rows: pd.DataFrame
    incomplete: int = 0
    unmatched: int = 0


@dataclass(frozen=True)
class CalibratedDriftRow:
    """One calibrated headline: a condition's mean drift, or its difference from the floor.

    ``calibrated`` and its intervals are ``None`` where no calibrated estimate could be
    made (``note`` says why); the headline is then the model-only one.
    """

    model: str
    metric: str
    what: str
    condition: str
    condition_class: str
    headline: Headline
    model_only: float
    model_only_ci: tuple[float, float]
    calibrated: float | None
    calibrated_ci: tuple[float, float] | None
    human_only: float | None
    human_only_ci: tuple[float, float] | None
    lam: float | None
    n_pairs: int
    n_questions: int
    n_human: int
    n_human_questions: int
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as ``None``)."""

        return json_ready(asdict(self))


@dataclass(frozen=True)
class CalibratedDrift:
    """Every calibrated drift headline of an analysis, and the slice's notes."""

    rows: tuple[CalibratedDriftRow, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    min_human: int = MIN_HUMAN_LABELS
    n_human_questions: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``stats.json``'s ``calibrated`` block)."""
        return {
            "study": STUDY,
            "rows": [r.to_dict() for r in self.rows],
            "notes": list(self.notes),
            "min_human": self.min_human,
            "n_human_questions": self.n_human_questions,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibratedDrift:
        """Read back :meth:`to_dict` (a stored analysis's ``stats.json`` block)."""

        def pair(v: Any) -> tuple[float, float] | None:
            if v is None:
                return None
            lo, hi = v
            return (math.nan if lo is None else float(lo), math.nan if hi is None else float(hi))

        rows = []
        for r in data.get("rows", []):
            got = dict(r)
            for k in ("model_only_ci", "calibrated_ci", "human_only_ci"):
                got[k] = pair(got.get(k))
            if got.get("model_only") is None:
                got["model_only"] = math.nan
            rows.append(CalibratedDriftRow(**got))
        return cls(
            tuple(rows),
            tuple(str(n) for n in data.get("notes", [])),
            int(data.get("min_human", MIN_HUMAN_LABELS)),
            int(data.get("n_human_questions", 0)),
        )


def model_only(
    drift: pd.DataFrame, note: str, *, metrics: Sequence[str] = METRICS, level: float = 0.95
) -> CalibratedDrift:
    """Every headline model-only, each with ``note`` saying why (an unusable human slice)."""
    empty = pd.DataFrame(columns=["model", "question_id", "condition", "sample", *metrics])
    out = calibrate_drift(drift, empty, metrics=metrics, level=level)
    return CalibratedDrift(
        tuple(replace(r, note=note) for r in out.rows), (note,), out.min_human, 0
    )


def _key(model: Any, question: Any, condition: Any, sample: Any) -> tuple[str, str, str, int]:
    return (str(model), str(question), str(condition), int(sample))


def human_drift_rows(
    drift: pd.DataFrame,
    steps: pd.DataFrame,
    symbol_of: Mapping[str, int],
    *,
    alpha: float = 0.5,
) -> HumanDrift:
    """Recompute each compared pair's DTW and SRI from the human leaves of its steps.

    Args:
        drift: The drift table from the LLM labels (``model, question_id, condition,
            sample, n_base, n_other`` at least; ``none`` rows are baseline sample ``k``
            against sample 0, every other row a condition against sample 0).
        steps: The human step labels (:data:`STEP_COLUMNS`).
        symbol_of: Leaf name → symbol of the analysis's ontology version (an unknown
            leaf, e.g. ``unmapped``, is symbol 0, as for the LLM's labels).
        alpha: SRI weight of the sequence term (as the drift table's).

    Returns:
        The human drift of every pair whose steps all have a human leaf.
    """
    leaves: dict[tuple[str, str, str, int], dict[int, str]] = {}
    inclusion: dict[tuple[str, str], float] = {}
    for m, q, c, s, i, leaf, p in steps[list(STEP_COLUMNS)].itertuples(index=False):
        leaves.setdefault(_key(m, q, c, s), {})[int(i)] = str(leaf)
        if p is not None and np.isfinite(float(p)):
            inclusion[(str(m), str(q))] = float(p)
    wanted = {(str(m), str(q)) for m, q, _, _ in leaves}
    compared: set[tuple[str, str, str, int]] = set()
    base_seqs: list[list[int]] = []
    other_seqs: list[list[int]] = []
    kept: list[tuple[str, str, str, int]] = []
    incomplete = 0

    def sequence(key: tuple[str, str, str, int], n: int) -> list[int] | None:
        got = leaves.get(key)
        if got is None or any(j not in got for j in range(n)):
            return None
        return [symbol_of.get(got[j], 0) for j in range(n)]

    cols = ["model", "question_id", "sample", "n_base", "n_other"]
    for c, (m, q, s, nb, no) in zip(
        _response_condition(drift), drift[cols].itertuples(index=False), strict=True
    ):
        key = _key(m, q, c, s)
        base_key = _key(m, q, BASELINE_CONDITION, 0)
        compared.update((key, base_key))
        if (str(m), str(q)) not in wanted:
            continue
        base = sequence(base_key, int(nb))
        other = sequence(key, int(no))
        if base is None or other is None:
            incomplete += 1
            continue
        base_seqs.append(base)
        other_seqs.append(other)
        kept.append(key)
    unmatched = sum(1 for k in leaves if k not in compared)
    metrics = ("dtw", "sri")
    if not kept:
        empty = pd.DataFrame(
            columns=["model", "question_id", "condition", "sample", *metrics,
                     "inclusion_probability"]
        )  # fmt: skip
        return HumanDrift(empty, incomplete, unmatched)
    d = pair_drift(base_seqs, other_seqs, alpha=alpha)
    rows = pd.DataFrame(
        {
            "model": [k[0] for k in kept],
            "question_id": [k[1] for k in kept],
            "condition": [k[2] for k in kept],
            "sample": np.array([k[3] for k in kept], dtype=np.int64),
            "dtw": np.asarray(d.dtw, dtype=np.float64),
            "sri": np.asarray(d.sri, dtype=np.float64),
            "inclusion_probability": [inclusion.get((k[0], k[1]), np.nan) for k in kept],
        }
    )
    return HumanDrift(rows, incomplete, unmatched)


def _response_condition(drift: pd.DataFrame) -> pd.Series:
    """Each row's response condition: ``drift.csv``'s ``variant`` (the stimulus key; its
    ``condition`` is the stimulus's category), else ``condition``."""
    col = "variant" if "variant" in drift.columns else "condition"
    return drift[col].astype(str)


def _joined(drift: pd.DataFrame, human: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """The drift table with each pair's human value (``h_<metric>``) and probability.

    A human row's ``condition`` is its response's condition (the stimulus key).
    """
    keys = ["model", "question_id", "_response", "sample"]
    left = drift.drop(columns=["inclusion_probability"], errors="ignore").copy()
    left["_response"] = _response_condition(drift).to_numpy()
    for k in keys[:2]:
        left[k] = left[k].astype(str)
    left["condition"] = left["condition"].astype(str)
    left["sample"] = left["sample"].astype(np.int64)
    if human.empty:
        for m in metrics:
            left[f"h_{m}"] = np.nan
        left["inclusion_probability"] = np.nan
        return left
    right = human[["model", "question_id", "condition", "sample", *metrics,
                   "inclusion_probability"]].copy()  # fmt: skip
    right = right.rename(columns={"condition": "_response", **{m: f"h_{m}" for m in metrics}})
    for k in keys[:3]:
        right[k] = right[k].astype(str)
    right["sample"] = right["sample"].astype(np.int64)
    return left.merge(right.drop_duplicates(keys), on=keys, how="left")


def joined_table(
    drift: pd.DataFrame, human: pd.DataFrame, metrics: Sequence[str] = METRICS
) -> pd.DataFrame:
    """The drift table with each pair's human drift (``h_<metric>``, NaN off the slice) and
    its question's inclusion probability: the PPI items of :func:`calibrate_drift`."""
    return _joined(drift, human, metrics)


def slice_arm(part: pd.DataFrame, metric: str) -> PPIArm:
    """One condition's pairs as a PPI arm (LLM drift, human drift, probability, question)."""
    return PPIArm(
        part[metric].to_numpy(dtype=float),
        part[f"h_{metric}"].to_numpy(dtype=float),
        part["inclusion_probability"].to_numpy(dtype=float),
        part["question_id"].to_numpy(),
    )


def _model_arm(part: pd.DataFrame, metric: str) -> PPIArm:
    # The model-only interval is the same clustered estimator on the model labels alone:
    # every item "labelled" by its own model value with probability 1, λ = 0.
    f = part[metric].to_numpy(dtype=float)
    return PPIArm(f, f, np.ones_like(f), part["question_id"].to_numpy())


def _slice_note(arms: Sequence[pd.DataFrame], metric: str) -> str | None:
    for part in arms:
        on = np.isfinite(part[f"h_{metric}"].to_numpy(dtype=float))
        if int(on.sum()) < 2:
            return (
                f"{int(on.sum())} human-labelled pair(s) here, fewer than 2: the model-only "
                "headline is kept"
            )
        p = part["inclusion_probability"].to_numpy(dtype=float)[on]
        if not np.all((p > 0) & (p <= 1)):
            return (
                "the human slice has no stored inclusion probabilities for its questions "
                "(push label_check with unit=question and a limit): the model-only headline "
                "is kept"
            )
    return None


def enough_humans(est: PPIEstimate, min_human: int = MIN_HUMAN_LABELS) -> bool:
    """A calibrated drift headline needs ``min_human`` questions with a human-labelled pair."""
    return est.n_human_clusters >= min_human


def _row(
    model: str,
    metric: str,
    what: str,
    condition: str,
    klass: str,
    mo: PPIEstimate,
    est: PPIEstimate | None,
    note: str | None,
    min_human: int,
) -> CalibratedDriftRow:
    enough = est is not None and note is None and enough_humans(est, min_human)
    if est is not None and note is None and not enough:
        note = (
            f"{est.n_human_clusters} questions carry human step labels, fewer than the "
            f"{min_human} a calibrated headline needs: the model-only one is kept"
        )
    return CalibratedDriftRow(
        model=model,
        metric=metric,
        what=what,
        condition=condition,
        condition_class=klass,
        headline="calibrated" if enough else "model-only",
        model_only=mo.estimate,
        model_only_ci=mo.ci,
        calibrated=est.estimate if est is not None else None,
        calibrated_ci=est.ci if est is not None else None,
        human_only=est.human_only if est is not None else None,
        human_only_ci=est.human_only_ci if est is not None else None,
        lam=est.lam if est is not None else None,
        n_pairs=mo.n_items,
        n_questions=mo.n_clusters,
        n_human=est.n_human if est is not None else 0,
        n_human_questions=est.n_human_clusters if est is not None else 0,
        note=note,
    )


def calibrate_drift(
    drift: pd.DataFrame,
    human: pd.DataFrame,
    *,
    metrics: Sequence[str] = METRICS,
    min_human: int = MIN_HUMAN_LABELS,
    level: float = 0.95,
    notes: Sequence[str] = (),
) -> CalibratedDrift:
    """Calibrated mean drift per condition and its paired difference from the noise floor.

    Runs on plain tables: ``drift`` is the drift table from the LLM labels (``model,
    question_id, condition, condition_class, sample`` and the metrics; ``drift.csv``),
    ``human`` the same pairs' drift from human labels with each question's inclusion
    probability (:attr:`HumanDrift.rows`, or any table with those columns).

    Args:
        drift: Every compared pair, drift from the LLM labels.
        human: The human-labelled pairs' drift (a subset of the keys of ``drift``).
        metrics: Metric columns to calibrate.
        min_human: Questions with a human-labelled pair a calibrated headline needs.
        level: Interval level.
        notes: Notes on the slice to carry (e.g. left-out labels).

    Returns:
        One row per model × metric × condition (``what="mean"``) and per model × metric
        × non-noise condition (``what="vs_noise"``: minus the pooled noise conditions).
    """
    table = _joined(drift, human, metrics)
    out_notes = list(notes)
    rows: list[CalibratedDriftRow] = []
    for model, metric in [(m, x) for m in sorted(table["model"].unique()) for x in metrics]:
        mt = table[table["model"] == model]
        mt = mt[np.isfinite(mt[metric].to_numpy(dtype=float))]
        noise = mt[mt["condition_class"] == "noise"]
        for condition, sub in mt.groupby("condition", sort=True):
            klass = str(sub["condition_class"].iloc[0])
            if len(sub) < 2:
                continue
            mo = _mean(_model_arm(sub, metric), lam=0.0, level=level)
            note = _slice_note([sub], metric)
            est = None
            if note is None:
                est = _mean(slice_arm(sub, metric), lam=None, level=level)
            rows.append(
                _row(str(model), metric, "mean", str(condition), klass, mo, est, note, min_human)
            )
            if klass == "noise" or len(noise) < 2:
                continue
            mo_d = ppi_difference(_model_arm(sub, metric), _model_arm(noise, metric), lam=0.0,
                                  level=level)  # fmt: skip
            note = _slice_note([sub, noise], metric)
            est = None
            if note is None:
                est = ppi_difference_jackknife(
                    slice_arm(sub, metric), slice_arm(noise, metric), level=level
                )
            rows.append(
                _row(str(model), metric, VS_NOISE, str(condition), klass, mo_d, est, note,
                     min_human)
            )  # fmt: skip
    on = table[np.isfinite(table[[f"h_{m}" for m in metrics]].to_numpy(dtype=float)).any(axis=1)]
    n_hq = int(on[["model", "question_id"]].drop_duplicates().shape[0])
    if rows and n_hq and n_hq < min_human:
        out_notes.append(
            f"{n_hq} questions carry human step labels, fewer than the {min_human} a "
            "calibrated headline needs: every headline is model-only"
        )
    return CalibratedDrift(tuple(rows), tuple(out_notes), min_human, n_hq)


def _mean(arm: PPIArm, *, lam: float | None, level: float) -> PPIEstimate:
    # The calibrated estimate (λ tuned) takes the question jackknife: with a slice of a few
    # dozen questions and skewed, mostly-zero drift the sandwich variance is too small
    # (docs/calibration.md); the model-only one (λ = 0, every question labelled) does not.
    estimator = ppi_mean if lam == 0.0 else ppi_mean_jackknife
    return estimator(
        arm.model, arm.human, inclusion=arm.inclusion, cluster=arm.cluster, lam=lam, level=level
    )


#: ``steplabel:response:{run}:{question}:{condition}:{sample}:{step}:…`` after the run and
#: question (which the task's data names): the condition and the sample.
_AFTER_QUESTION = re.compile(r"^(?P<condition>.+?):(?P<sample>\d+):(?P<step>\d+):")


@dataclass(frozen=True)
class HumanStepLabels:
    """The pulled ``label_check`` leaves of one analysis's runs, as a plain table.

    Attributes:
        steps: :data:`STEP_COLUMNS`, one row per step with a human leaf.
        undecided: Steps whose annotators were unsure or did not agree (no human leaf).
        other_version: Human-labelled steps under another ontology version than the
            analysis's (their leaves are of another scheme: left out).
        versions: The ontology versions the left-out steps were labelled under.
        step_unit: Steps whose inclusion probability is of the step alone (a slice
            drawn step by step), not of its question.
    """

    steps: pd.DataFrame
    undecided: int = 0
    other_version: int = 0
    versions: tuple[str, ...] = ()
    step_unit: int = 0


def human_step_labels(
    run_models: Mapping[str, str], version: str, *, session: Session
) -> HumanStepLabels | None:
    """The human leaf of each step of the runs' responses from the pulled ``label_check``.

    A step's human leaf is the LLM's leaf when a majority says it fits and the annotators'
    agreed better leaf when a majority says it does not (as ``judges calibration-table``
    reads the study); several labelers' tasks on one step give one leaf (the first decided).

    Args:
        run_models: Run name → the drift table's ``model`` of that run.
        version: The analysis's ontology version (``name@N``).
        session: Open session.

    Returns:
        ``None`` when no ``label_check`` study has been pulled.
    """
    from annotation.apply import study_aggregate
    from annotation.tasks import INCLUSION_FIELD, INCLUSION_UNIT_FIELD
    from storage.errors import NotFoundError
    from storage.repo import studies as repo
    from study.reasoning.human.responses import _human_leaf

    if repo.latest_study(STUDY, session=session) is None:
        return None
    try:
        _, agg = study_aggregate(STUDY, session=session)
    except NotFoundError:
        return None
    rows: dict[tuple[str, str, str, int, int], tuple[str, float]] = {}
    undecided = other = step_unit = 0
    versions: set[str] = set()
    for it in agg.items:
        p = it.payload
        run = str(p.get("run", ""))
        if run not in run_models:
            continue
        question = str(p.get("question_id", ""))
        prefix = f"steplabel:response:{run}:{question}:"
        m = _AFTER_QUESTION.match(it.key[len(prefix) :]) if it.key.startswith(prefix) else None
        if m is None:
            continue
        leaf = _human_leaf(it, "agree")
        if leaf is None:
            undecided += 1
            continue
        if str(p.get("ontology", "")) != version:
            other += 1
            versions.add(str(p.get("ontology", "")))
            continue
        prob = p.get(INCLUSION_FIELD)
        pi = float(prob) if isinstance(prob, int | float) and 0 < float(prob) <= 1 else np.nan
        if np.isfinite(pi) and pi < 1 and p.get(INCLUSION_UNIT_FIELD) != "question":
            step_unit += 1
            pi = np.nan  # a step's own probability is not its question's
        key = (run, question, m["condition"], int(m["sample"]), int(m["step"]))
        rows.setdefault(key, (leaf, pi))
    steps = pd.DataFrame(
        [
            (run_models[r], q, c, s, i, leaf, pi)
            for (r, q, c, s, i), (leaf, pi) in sorted(rows.items())
        ],
        columns=list(STEP_COLUMNS),
    )
    return HumanStepLabels(steps, undecided, other, tuple(sorted(versions)), step_unit)


def slice_notes(labels: HumanStepLabels, human: HumanDrift, version: str) -> list[str]:
    """One sentence per kind of human label the calibration left out."""
    notes = []
    if labels.other_version:
        notes.append(
            f"{labels.other_version} human step labels are under ontology "
            f"{', '.join(labels.versions)}, not the analysis's {version}: another leaf "
            "scheme, left out"
        )
    if labels.step_unit:
        notes.append(
            f"{labels.step_unit} human step labels were drawn step by step (no unit=question): "
            "their questions' probabilities are unknown"
        )
    if human.unmatched:
        notes.append(
            f"{human.unmatched} human-labelled responses were never labelled by this "
            "analysis's LLM labeler (or not compared) and are left out"
        )
    if labels.steps.empty and labels.undecided:
        notes.append(
            f"none of the {labels.undecided} human-checked steps has an agreed leaf (unsure "
            "or undecided votes)"
        )
    if human.incomplete:
        notes.append(
            f"{human.incomplete} pairs of slice questions have a step without a human leaf "
            f"({labels.undecided} steps unsure or undecided) and are left out"
        )
    return notes


def calibrated_drift(
    drift: pd.DataFrame,
    run_models: Mapping[str, str],
    version: str,
    symbol_of: Mapping[str, int],
    *,
    session: Session,
    metrics: Sequence[str] = METRICS,
    min_human: int = MIN_HUMAN_LABELS,
    alpha: float = 0.5,
) -> CalibratedDrift | None:
    """The calibrated drift headlines of an analysis (``None`` when no slice was pulled).

    Args:
        drift: The analysis's drift table (``drift.csv``).
        run_models: Run name → the table's ``model`` of that run.
        version: The analysis's ontology version (``name@N``).
        symbol_of: Its leaf → symbol map.
        session: Open session.
        metrics: Metric columns to calibrate.
        min_human: Questions a calibrated headline needs.
        alpha: SRI weight of the sequence term.
    """
    labels = human_step_labels(run_models, version, session=session)
    if labels is None:
        return None
    metrics = [m for m in metrics if m in drift.columns]
    human = human_drift_rows(drift, labels.steps, symbol_of, alpha=alpha)
    notes = slice_notes(labels, human, version)
    if labels.steps.empty and not labels.other_version and not labels.undecided:
        return None  # the study is about other runs
    if human.rows.empty:
        reason = notes[0] if notes else "no pair has human labels on every step"
        return model_only(drift, f"{reason}: the model-only headline is kept", metrics=metrics)
    return calibrate_drift(drift, human.rows, metrics=metrics, min_human=min_human, notes=notes)


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _ci(point: float | None, ci: tuple[float, float] | None) -> str:
    if point is None or ci is None:
        return "–"
    return f"{_fmt(point)} [{_fmt(ci[0])}, {_fmt(ci[1])}]"


def calibrated_frame(cal: CalibratedDrift) -> pd.DataFrame:
    """The report's table: one text row per headline, model-only beside calibrated."""
    return pd.DataFrame(
        [
            {
                "model": r.model,
                "metric": r.metric,
                "estimate": "mean" if r.what == "mean" else "minus noise floor",
                "condition": r.condition,
                "headline": r.headline,
                "model-only [95% CI]": _ci(r.model_only, r.model_only_ci),
                "calibrated [95% CI]": _ci(r.calibrated, r.calibrated_ci),
                "human-only [95% CI]": _ci(r.human_only, r.human_only_ci),
                "λ": _fmt(r.lam, 2),
                "human questions / questions": f"{r.n_human_questions} / {r.n_questions}",
                "note": r.note or "",
            }
            for r in cal.rows
        ],
        columns=[
            "model", "metric", "estimate", "condition", "headline", "model-only [95% CI]",
            "calibrated [95% CI]", "human-only [95% CI]", "λ", "human questions / questions",
            "note",
        ],
    )  # fmt: skip


def calibrated_notes(cal: CalibratedDrift) -> tuple[str, ...]:
    """The sentences above the report's table: the method, the slice, what was left out."""
    head = (
        f"Drift from the LLM labeler's step labels on every question, corrected by human "
        f"step labels ({STUDY}) on {cal.n_human_questions} questions (PPI++, power-tuned λ, "
        "clustered by question, weighted by each question's stored inclusion probability). "
        f"The headline is the calibrated estimate where at least {cal.min_human} questions "
        "carry a human-labelled pair, the model-only one otherwise."
    )
    return (head, *cal.notes)


def calibrated_lines(cal: CalibratedDrift | None) -> list[str]:
    """Terminal lines: each headline with model-only and calibrated (escaped by the caller)."""
    if cal is None:
        return []
    out = [f"calibrated to people ({STUDY}, {cal.n_human_questions} human-labelled questions):"]
    for r in cal.rows:
        what = "mean" if r.what == "mean" else "− noise"
        out.append(
            f"  {r.model} {r.metric} {r.condition} {what}: headline {r.headline}; model-only "
            f"{_ci(r.model_only, r.model_only_ci)}, calibrated {_ci(r.calibrated, r.calibrated_ci)}"
            f" ({r.n_human_questions}/{r.n_questions} questions)"
            + (f" — {r.note}" if r.note else "")
        )
    out.extend(f"  note: {n}" for n in cal.notes)
    return out
