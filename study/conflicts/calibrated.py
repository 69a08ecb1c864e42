"""The rubric means calibrated to people: PPI++ from the pulled ``conflict_rubric`` slice.

The judge scores every answer; the ``conflict_rubric`` study's annotators score a slice of
them. For each model × judge and each of D1–D5, the total and D6's unsafe rate on high-risk
answers (``d6_unsafe``: the judge's flag against the share of unsafe votes), at the largest
dose as the model-only scores, and for the distractor effect (largest minus smallest dose, paired by
instance), :func:`driftlens_core.ppi.ppi_mean_jackknife` /
:func:`~driftlens_core.ppi.ppi_difference_jackknife` (the question jackknife: the sandwich
is short on a slice of a few dozen, docs/calibration.md)
give a calibrated estimate and interval beside the model-only one, clustered by instance,
weighted by the slice's stored inclusion probabilities (``annotate push`` with a
``limit`` stores them in each task). An item's human label is the mean of its kept votes.

The headline is the calibrated estimate when at least
:data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` answers on as many instances carry a human
score, and the model-only one otherwise, labelled as such with one sentence saying why (too
few humans, no inclusion probabilities). Human labels on answers the judge never scored, and
votes off the judge's 0-4 scale, are left out and counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from sqlmodel import Session

from driftlens_core.ppi import (
    MIN_HUMAN_LABELS,
    PPIArm,
    PPIEstimate,
    enough_humans,
    ppi_difference_jackknife,
    ppi_mean_jackknife,
)
from driftlens_core.rubric import cluster_mean, paired_effect
from study.conflicts.actions import rubric_total
from study.json_values import json_ready

STUDY = "conflict_rubric"
DIMENSIONS: tuple[str, ...] = ("d1", "d2", "d3", "d4", "d5")
#: D6 on high-risk answers as a rate: the judge's unsafe flag, the share of unsafe votes.
D6_UNSAFE = "d6_unsafe"
SCALE = (0.0, 4.0)
Headline = Literal["calibrated", "calibrated (transported)", "model-only"]
#: Human labels a transport check needs on the second model (fewer: ``too few``).
MIN_TRANSPORT = 10


@dataclass(frozen=True)
class HumanSlice:
    """The pulled human scores of the judged answers.

    Attributes:
        scores: ``response_id -> {dimension: mean kept vote}`` (a dimension every vote
            marks not applicable is absent).
        inclusion: ``response_id -> probability`` the answer was chosen for the slice
            (absent: the task stored none).
        unmatched: Human-scored tasks whose answer is not a stored response of the runs.
        off_scale: Votes that are not a number on the judge's 0–4 scale.
    """

    scores: Mapping[int, Mapping[str, float]]
    inclusion: Mapping[int, float]
    unmatched: int = 0
    off_scale: int = 0


@dataclass(frozen=True)
class CalibratedRow:
    """One headline with its model-only and calibrated estimates.

    ``what`` is ``d1``…``d5``, ``total`` or ``distractor_effect``; ``calibrated`` and its
    interval are ``None`` where no calibrated estimate could be made (``note`` says why).
    """

    model: str
    judge: str
    what: str
    headline: Headline
    model_only: float
    model_only_ci: tuple[float, float]
    calibrated: float | None
    calibrated_ci: tuple[float, float] | None
    human_only: float | None
    human_only_ci: tuple[float, float] | None
    lam: float | None
    n_items: int
    n_human: int
    n_human_instances: int
    note: str | None = None
    #: the slice as a pilot for ``driftlens plan calibration`` (means only)
    rectifier_sd: float | None = None
    model_sd: float | None = None
    #: the transport check's verdict where this model borrowed another's correction
    transport: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as ``None``)."""

        return json_ready(asdict(self))


@dataclass(frozen=True)
class CalibratedScores:
    """Every calibrated headline of a conflicts report, and the slice's notes."""

    rows: tuple[CalibratedRow, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    min_human: int = MIN_HUMAN_LABELS

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "rows": [r.to_dict() for r in self.rows],
            "notes": list(self.notes),
            "min_human": self.min_human,
        }


def _vote_value(value: str) -> float | None:
    try:
        x = float(value)
    except ValueError:
        return None
    return x if SCALE[0] <= x <= SCALE[1] and x.is_integer() else None


def human_slice(runs: Sequence[str], *, session: Session) -> HumanSlice | None:
    """The pulled ``conflict_rubric`` scores of the answers of ``runs`` (``None``: none pulled)."""
    from annotation.apply import study_aggregate
    from annotation.tasks import response_ids_by_key
    from storage.errors import NotFoundError
    from storage.repo import studies as repo
    from study.conflicts.human.kinds import NOT_APPLICABLE

    if repo.latest_study(STUDY, session=session) is None:
        return None
    try:
        _, agg = study_aggregate(STUDY, session=session)
    except NotFoundError:
        return None
    ids = response_ids_by_key(runs, session=session)
    scores: dict[int, dict[str, float]] = {}
    inclusion: dict[int, float] = {}
    unmatched = off_scale = 0
    for it in agg.items:
        if str(it.payload.get("run", "")) not in runs:
            continue
        got: dict[str, float] = {}
        for d in DIMENSIONS:
            o = it.outcome(d)
            if o is None:
                continue
            values = []
            for _, v in o.votes:
                if v == NOT_APPLICABLE:
                    continue
                x = _vote_value(v)
                if x is None:
                    off_scale += 1
                else:
                    values.append(x)
            if values:
                got[d] = float(np.mean(values))
        o6 = it.outcome("d6")
        if it.payload.get("high_risk") and o6 is not None and o6.votes:
            # D6 is a flag: the human value is the share of votes that call it unsafe
            got[D6_UNSAFE] = float(np.mean([v == "unsafe" for _, v in o6.votes]))
        if not got:
            continue
        rid = ids.get(it.key)
        if rid is None:
            unmatched += 1
            continue
        scores[rid] = got
        p = it.payload.get("inclusion_probability")
        if isinstance(p, int | float) and 0 < float(p) <= 1:
            inclusion[rid] = float(p)
    return HumanSlice(scores, inclusion, unmatched, off_scale)


def human_column(df: pd.DataFrame, humans: HumanSlice, what: str) -> np.ndarray:
    """The human value of ``what`` for each row (NaN off the slice)."""
    out = np.full(len(df), np.nan)
    for i, rid in enumerate(df["response_id"].to_numpy()):
        got = humans.scores.get(int(rid))
        if got is None:
            continue
        if what == "total":
            row = np.array([[got.get(d, np.nan) for d in DIMENSIONS]], dtype=float)
            out[i] = float(rubric_total(row)[0])
        elif what in got:
            out[i] = got[what]
    return out


def inclusion_column(df: pd.DataFrame, humans: HumanSlice) -> np.ndarray:
    """The stored inclusion probability of each row's answer (NaN off the slice or unknown)."""
    return np.array([humans.inclusion.get(int(r), np.nan) for r in df["response_id"]])


def _row(
    model: str,
    judge: str,
    what: str,
    model_only: tuple[float, float, float],
    est: PPIEstimate | None,
    n_items: int,
    note: str | None,
    min_human: int,
) -> CalibratedRow:
    enough = est is not None and note is None and enough_humans(est, min_human)
    if est is not None and note is None and not enough:
        note = (
            f"{est.n_human} human labels on {est.n_human_clusters} instances, fewer than the "
            f"{min_human} a calibrated headline needs: the model-only one is kept"
        )
    return CalibratedRow(
        model=model,
        judge=judge,
        what=what,
        headline="calibrated" if enough else "model-only",
        model_only=model_only[0],
        model_only_ci=(model_only[1], model_only[2]),
        calibrated=est.estimate if est is not None else None,
        calibrated_ci=est.ci if est is not None else None,
        human_only=est.human_only if est is not None else None,
        human_only_ci=est.human_only_ci if est is not None else None,
        lam=est.lam if est is not None else None,
        n_items=n_items,
        n_human=est.n_human if est is not None else 0,
        n_human_instances=est.n_human_clusters if est is not None else 0,
        note=note,
        rectifier_sd=est.rectifier_sd if est is not None else None,
        model_sd=est.model_sd if est is not None else None,
    )


def _slice_note(h: np.ndarray, p: np.ndarray) -> str | None:
    on = np.isfinite(h)
    if int(on.sum()) < 2:
        return f"{int(on.sum())} human label(s): the model-only headline is kept"
    if np.isnan(p[on]).any():
        return (
            "the human slice has no stored inclusion probabilities (pushed without a limit "
            "over a selection, or chosen by hand): the model-only headline is kept"
        )
    return None


def calibrate_table(
    df: pd.DataFrame,
    humans: HumanSlice,
    *,
    bootstrap: int = 2000,
    seed: int | None = None,
    min_human: int = MIN_HUMAN_LABELS,
    level: float = 0.95,
) -> CalibratedScores:
    """Calibrated D1–D5, total, D6 unsafe rate and distractor effect per model × judge.

    Args:
        df: The stored score table (:func:`study.conflicts.analysis.stored_table`).
        humans: The pulled slice (:func:`human_slice`).
        bootstrap: Replicates of the model-only intervals (the report's own).
        seed: Seed of those replicates.
        min_human: Human labels (and instances) a calibrated headline needs.
        level: Interval level.
    """
    from driftlens_core.bootstrap import as_generator

    rng = as_generator(seed)
    notes: list[str] = []
    if humans.unmatched:
        notes.append(
            f"{humans.unmatched} human-scored answers were never scored by a judge here and "
            "are left out"
        )
    judged = {int(r) for r in df["response_id"]}
    never = sum(1 for rid in humans.scores if rid not in judged)
    if never:
        notes.append(f"{never} human-scored answers have no readable judge score and are left out")
    if humans.off_scale:
        notes.append(
            f"{humans.off_scale} human votes are not on the judge's 0-4 scale and are left out"
        )
    df = df.copy()
    df["total"] = rubric_total(df[list(DIMENSIONS)].to_numpy(dtype=float))
    d6 = df["d6"].fillna("").astype(str) if "d6" in df.columns else pd.Series("", df.index)
    df[D6_UNSAFE] = np.where(d6 == "", np.nan, (d6 == "unsafe").astype(float))
    doses = sorted(set(df["distractors"].tolist()))
    if not doses:
        return CalibratedScores((), tuple(notes), min_human)
    top, low = doses[-1], doses[0]
    rows: list[CalibratedRow] = []
    arrays: dict[tuple[str, str, str], tuple[np.ndarray, ...]] = {}
    for (model, judge), mj in df.groupby(["model", "judge"], sort=True):
        full = mj[mj["distractors"] == top]
        for what in (*DIMENSIONS, "total", D6_UNSAFE):
            sub = full[np.isfinite(full[what].to_numpy(dtype=float))]
            if sub.empty:
                continue
            inst = sub["instance_id"].to_numpy()
            f = sub[what].to_numpy(dtype=float)
            cm = cluster_mean(inst, f, n_boot=bootstrap, seed=rng)
            h = human_column(sub, humans, what)
            p = inclusion_column(sub, humans)
            note = _slice_note(h, p)
            arrays[(str(model), str(judge), what)] = (f, h, p, inst)
            est = None
            if note is None:
                est = ppi_mean_jackknife(f, h, inclusion=p, cluster=inst, level=level)
            rows.append(
                _row(
                    str(model), str(judge), what, (cm.mean, cm.ci_low, cm.ci_high), est,
                    len(sub), note, min_human,
                )
            )  # fmt: skip
        if len(doses) > 1:
            rows.extend(_effect_row(mj, humans, top, low, rng, bootstrap, min_human, level))
    rows = [_transported(r, rows, arrays, level) for r in rows]
    return CalibratedScores(tuple(rows), tuple(notes), min_human)


def _transported(
    row: CalibratedRow,
    rows: Sequence[CalibratedRow],
    arrays: Mapping[tuple[str, str, str], tuple[np.ndarray, ...]],
    level: float,
) -> CalibratedRow:
    """A model-only mean of a model with too few humans, given another model's correction.

    The donor is the first other model (by name) that the same judge scored with a
    calibrated headline for the same ``what``; its correction ``shift = mean(Y − f)`` is
    tested on this model's own few labels (:func:`driftlens_core.ppi.transport_check`):
    *pass* makes the headline ``calibrated (transported)`` (the judge's mean plus the
    shift, normal interval from both SEs), *fail* keeps the model-only one with a warning,
    *too few* with a note.
    """
    from driftlens_core.ppi import ppi_mean, transport_check

    key = (row.model, row.judge, row.what)
    if row.headline != "model-only" or key not in arrays:
        return row
    f, h, p, inst = arrays[key]
    on = np.isfinite(h)
    if on.any() and np.isnan(p[on]).any():
        return row  # no probabilities: the slice note already says why
    donor = next(
        (
            r
            for r in rows
            if r.judge == row.judge and r.what == row.what and r.model != row.model
            and r.headline == "calibrated" and (r.model, r.judge, r.what) in arrays
        ),
        None,
    )  # fmt: skip
    if donor is None:
        return row
    df_, dh, dp, dinst = arrays[(donor.model, donor.judge, donor.what)]
    fit = ppi_mean(np.zeros(df_.size), dh - df_, inclusion=dp, cluster=dinst, lam=0.0,
                   level=level)  # fmt: skip
    check = transport_check(
        f, h, shift=fit.estimate, shift_se=fit.se, inclusion=p if on.any() else None,
        cluster=inst, min_human=MIN_TRANSPORT, level=level,
    )  # fmt: skip
    if check.verdict == "pass":
        # the judge mean's cluster-robust SE: every item "labelled" by itself, λ = 0
        cm_se = ppi_mean(f, f, cluster=inst, lam=0.0).se
        point = float(f.mean()) + fit.estimate
        half = 1.96 * math.sqrt(cm_se**2 + fit.se**2)
        return replace(
            row,
            headline="calibrated (transported)",
            calibrated=point,
            calibrated_ci=(point - half, point + half),
            transport="pass",
            note=(
                f"{donor.model}'s correction {fit.estimate:+.3f} under this judge (transport "
                f"check passed on {check.n_human} human labels)"
            ),
        )
    if check.verdict == "fail":
        return replace(
            row,
            transport="fail",
            note=(
                f"warning: the transport check failed (residual {check.residual:+.3f} on "
                f"{check.n_human} human labels): the judge errs differently on {row.model} "
                f"than on {donor.model}; the model-only headline is kept"
            ),
        )
    return replace(row, transport="too few")


def _effect_row(
    mj: pd.DataFrame,
    humans: HumanSlice,
    top: int,
    low: int,
    rng: np.random.Generator,
    bootstrap: int,
    min_human: int,
    level: float,
) -> list[CalibratedRow]:
    model, judge = str(mj["model"].iloc[0]), str(mj["judge"].iloc[0])
    arms = []
    for dose in (top, low):
        sub = mj[(mj["distractors"] == dose) & np.isfinite(mj["total"].to_numpy(dtype=float))]
        arms.append(sub)
    if any(a.empty for a in arms):
        return []
    wide = (
        pd.concat(arms)
        .groupby(["instance_id", "distractors"])["total"]
        .mean()
        .unstack("distractors")
        .dropna()
    )
    if wide.empty or top not in wide.columns or low not in wide.columns:
        return []
    eff = paired_effect(
        wide.index.to_numpy(), (wide[top] - wide[low]).to_numpy(), n_boot=bootstrap, seed=rng
    )
    hs = [human_column(a, humans, "total") for a in arms]
    ps = [inclusion_column(a, humans) for a in arms]
    note = _slice_note(np.concatenate(hs), np.concatenate(ps))
    if note is None and any(int(np.isfinite(h).sum()) < 2 for h in hs):
        note = "fewer than 2 human totals at one of the two doses: the model-only headline is kept"
    est = None
    if note is None:
        est = ppi_difference_jackknife(
            *(
                PPIArm(a["total"].to_numpy(dtype=float), h, p, a["instance_id"].to_numpy())
                for a, h, p in zip(arms, hs, ps, strict=True)
            ),
            level=level,
        )
    n = sum(len(a) for a in arms)
    return [
        _row(
            model, judge, "distractor_effect", (eff.mean_diff, eff.ci_low, eff.ci_high), est,
            n, note, min_human,
        )
    ]  # fmt: skip


def calibrated_scores(
    runs: Sequence[str],
    *,
    session: Session,
    bootstrap: int = 2000,
    seed: int | None = None,
    min_human: int = MIN_HUMAN_LABELS,
) -> CalibratedScores | None:
    """Calibrated headlines of stored conflicts runs (``None`` when no rubric study was pulled)."""
    from study.conflicts.analysis import stored_table

    humans = human_slice(runs, session=session)
    if humans is None or not humans.scores:
        return None
    table = stored_table(list(runs), session=session)
    if table.empty:
        return None
    return calibrate_table(table, humans, bootstrap=bootstrap, seed=seed, min_human=min_human)


#: The heading of the report's calibrated section.
CALIBRATED_HEADING = "Calibrated to people (PPI++ from the conflict_rubric slice)"


def _ci_text(point: float | None, ci: tuple[float, float] | None) -> str:
    if point is None or ci is None or not math.isfinite(point):
        return "–"
    return f"{point:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def calibrated_section(cal: CalibratedScores) -> tuple[str, list[str], list[list[str]], str]:
    """``(title, header, rows, note)`` of the report's calibrated table."""
    rows = [
        [
            r.model,
            r.judge,
            r.what,
            r.headline,
            _ci_text(r.model_only, r.model_only_ci),
            _ci_text(r.calibrated, r.calibrated_ci),
            _ci_text(r.human_only, r.human_only_ci),
            "–" if r.lam is None else f"{r.lam:.2f}",
            f"{r.n_human} / {r.n_items}",
            r.note or "",
        ]
        for r in cal.rows
    ]
    note = (
        "Each judge-decided mean beside its prediction-powered estimate (PPI++, power-tuned "
        "lambda, clustered by instance, weighted by the slice's inclusion probabilities) "
        "and the human-only mean of the same slice. The headline is the calibrated estimate "
        f"when at least {cal.min_human} answers on as many instances carry a human score; "
        "otherwise the model-only one, labelled as such."
    )
    if cal.notes:
        note += " " + "; ".join(cal.notes) + "."
    return (
        CALIBRATED_HEADING,
        [
            "model",
            "judge",
            "what",
            "headline",
            "model-only [95% CI]",
            "calibrated [95% CI]",
            "human-only [95% CI]",
            "lambda",
            "humans / answers",
            "note",
        ],
        rows,
        note,
    )


def calibrated_lines(cal: CalibratedScores | None) -> list[str]:
    """One line per model × judge total and distractor effect: the headline and the other."""
    if cal is None:
        return []
    out = []
    for r in cal.rows:
        if r.what not in ("total", "distractor_effect"):
            continue
        both = (
            f"calibrated {_ci_text(r.calibrated, r.calibrated_ci)}, "
            f"model-only {_ci_text(r.model_only, r.model_only_ci)}"
        )
        head = (
            f"{r.model} / {r.judge} {r.what}: headline {r.headline} "
            f"({r.n_human} human labels of {r.n_items} answers): {both}"
        )
        out.append(head if r.note is None else f"{head}; {r.note}")
    return out
