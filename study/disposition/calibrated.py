"""Disposition rates and drift calibrated to people: PPI++ from the pulled ``disposition_check``.

The classifier decides whether every answer takes the battery's aligned category; the
``disposition_check`` study's annotators categorise a slice of the answers. An answer's
human value is the share of its kept votes that name the aligned category (the classifier's
1/0 against the people's mean). Per reasoning group, battery and arm:

* the **aligned rate**: the classifier's rate over every answered response (model-only,
  95 % interval over stems) beside the prediction-powered rate
  (:func:`driftlens_core.ppi.ppi_mean_jackknife`, clustered by stem, weighted by the
  slice's stored inclusion probabilities) and the human-only rate of the same slice;
* the **drift** (arm minus the group's reference, in percentage points, paired by stem):
  the report's model-only drift beside :func:`~driftlens_core.ppi.ppi_difference_jackknife`.

Which is the headline: the calibrated estimate when the arm has at least
:data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` human-checked answers on as many of its stems, or
on every stem it answered when it answered fewer (:func:`~driftlens_core.ppi.enough_humans`,
the rule of every instrument and of ``driftlens compare``); a drift's headline is calibrated
when both its arm's and the reference's own rates are. A stem an arm never answered is not
one of its stems: it is outside the arm's rate, so it cannot be asked of its slice.
Otherwise:

* **transport** — an arm with too few humans of its own borrows the reference arm's
  correction (``shift = mean(Y − f)`` on the reference's slice) when the
  :func:`~driftlens_core.ppi.transport_check` on its own few labels passes: the rate's
  headline is then ``calibrated (transported)``, the classifier's rate plus that shift. A
  *failed* check (the classifier errs differently on this arm's model) keeps the
  model-only headline with a warning, also on the drift, whose model-only value assumes
  the classifier errs alike in both arms; *too few* labels keep it with a note;
* a slice without stored inclusion probabilities, or fewer than two human labels, keeps
  the model-only headline with one sentence saying why.

Human answers the classifier never categorised here, and votes on a battery whose aligned
category is unknown, are left out and counted in ``notes``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from sqlmodel import Session

from driftlens_core.ppi import (
    MIN_HUMAN_LABELS,
    PPIArm,
    PPIEstimate,
    TransportCheck,
    enough_humans,
    ppi_difference_jackknife,
    ppi_mean,
    ppi_mean_jackknife,
    transport_check,
)
from driftlens_core.rubric import cluster_mean
from study.json_values import json_ready

STUDY = "disposition_check"
Headline = Literal["calibrated", "calibrated (transported)", "model-only"]
#: Human labels a transport check needs on the second arm (fewer: ``too few``).
MIN_TRANSPORT = 10


@dataclass(frozen=True)
class DispositionHumans:
    """The pulled human categories of a disposition study's answers.

    Attributes:
        aligned: Task key (:func:`study.disposition.human.kinds.disposition_key`) -> the
            share of the kept votes naming the battery's aligned category.
        inclusion: Task key -> the stored probability that the answer was chosen.
        unknown_battery: Checked answers of a battery whose aligned category is unknown.
        off_scale: Votes naming no category of the answer's battery (left out).
    """

    aligned: Mapping[str, float]
    inclusion: Mapping[str, float]
    unknown_battery: int = 0
    off_scale: int = 0


@dataclass(frozen=True)
class CalibratedRate:
    """One rate or drift with its model-only and calibrated estimates (rates as shares,
    drifts in percentage points)."""

    group: str
    battery: str
    arm: str
    what: Literal["aligned_rate", "drift_pp"]
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
    n_human_stems: int
    transport: str | None = None
    note: str | None = None
    #: the slice as a pilot for the planner (rates only)
    rectifier_sd: float | None = None
    model_sd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as ``None``)."""

        return json_ready(asdict(self))


@dataclass(frozen=True)
class CalibratedDisposition:
    """Every calibrated rate and drift of a disposition analysis, and the slice's notes."""

    rows: tuple[CalibratedRate, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    min_human: int = MIN_HUMAN_LABELS

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the ``calibrated`` block of the analysis's stats)."""
        return {
            "rows": [r.to_dict() for r in self.rows],
            "notes": list(self.notes),
            "min_human": self.min_human,
        }


def aligned_categories(study: str, *, session: Session) -> dict[str, str]:
    """The aligned category of each battery of ``study``.

    Read from the classifier's stored scores (a category scored 1 is the aligned one),
    else from the shipped sample batteries.
    """
    from storage.repo.disposition import arm_responses, require_arms, scores_for
    from study.disposition.items import load_sample_batteries

    out = {b.name: b.aligned_category for b in load_sample_batteries().batteries}
    arms = require_arms(study, session=session)
    responses = arm_responses([a.id for a in arms if a.id is not None], session=session)
    battery_of = {int(r.id or 0): r.battery for r in responses}
    for s in scores_for(list(battery_of), session=session):
        if s.value == 1.0 and s.label:
            out[battery_of[int(s.response_id)]] = s.label
    return out


def human_slice(study: str, *, session: Session) -> DispositionHumans | None:
    """The pulled ``disposition_check`` answers of ``study`` (``None``: none pulled)."""
    from annotation.apply import study_aggregate
    from storage.errors import NotFoundError
    from storage.repo import studies as repo
    from study.disposition.human.kinds import disposition_key

    if repo.latest_study(STUDY, session=session) is None:
        return None
    try:
        _, agg = study_aggregate(STUDY, session=session)
    except NotFoundError:
        return None
    aligned_of = aligned_categories(study, session=session)
    aligned: dict[str, float] = {}
    inclusion: dict[str, float] = {}
    unknown = off_scale = 0
    for it in agg.items:
        pl = it.payload
        if str(pl.get("study", "")) != study:
            continue
        o = it.outcome("category")
        if o is None or not o.votes:
            continue
        target = aligned_of.get(str(pl.get("battery", "")))
        if target is None:
            unknown += 1
            continue
        key = disposition_key(
            study, str(pl.get("arm", "")), str(pl.get("battery", "")), str(pl.get("stem", "")),
            int(pl.get("paraphrase", 0)), int(pl.get("sample", 0)),
        )  # fmt: skip
        offered = {str(c.get("value")) for c in pl.get("categories") or [] if isinstance(c, dict)}
        votes = [v for _, v in o.votes if not offered or v in offered]
        off_scale += len(o.votes) - len(votes)
        if not votes:
            continue
        aligned[key] = float(np.mean([v == target for v in votes]))
        p = pl.get("inclusion_probability")
        if isinstance(p, int | float) and 0 < float(p) <= 1:
            inclusion[key] = float(p)
    return DispositionHumans(aligned, inclusion, unknown, off_scale)


def _keys(study: str, df: pd.DataFrame) -> list[str]:
    from study.disposition.human.kinds import disposition_key

    return [
        disposition_key(study, str(a), str(b), str(s), int(str(p).lstrip("p") or 0), int(n))
        for a, b, s, p, n in zip(
            df["arm"], df["battery"], df["stem"], df["probe"], df["sample"], strict=True
        )
    ]


@dataclass(frozen=True)
class _Arm:
    """One arm's answered responses of one battery: classifier 1/0, human share, slice."""

    f: np.ndarray
    h: np.ndarray
    p: np.ndarray
    stem: np.ndarray

    @property
    def n_human(self) -> int:
        return int(np.isfinite(self.h).sum())

    def ppi(self) -> PPIArm:
        return PPIArm(self.f, self.h, self.p, self.stem)


def slice_arm(study: str, part: pd.DataFrame, humans: DispositionHumans) -> _Arm:
    """One arm's answers (classifier 1/0, human share, probability, stem) of a rate table."""
    return _arm(study, part, humans)


def _arm(study: str, part: pd.DataFrame, humans: DispositionHumans) -> _Arm:
    keys = _keys(study, part)
    return _Arm(
        part["aligned"].to_numpy(dtype=float),
        np.array([humans.aligned.get(k, np.nan) for k in keys]),
        np.array([humans.inclusion.get(k, np.nan) for k in keys]),
        part["stem"].astype(str).to_numpy(),
    )


def _slice_note(arm: _Arm) -> str | None:
    on = np.isfinite(arm.h)
    if int(on.sum()) < 2:
        return f"{int(on.sum())} human label(s): the model-only headline is kept"
    if np.isnan(arm.p[on]).any():
        return (
            "the human slice has no stored inclusion probabilities (pushed without a limit "
            "over a selection, or chosen by hand): the model-only headline is kept"
        )
    return None


def _no_probabilities(arm: _Arm) -> bool:
    """Some human-labelled answer of the arm has no stored inclusion probability."""
    on = np.isfinite(arm.h)
    return bool(on.any() and np.isnan(arm.p[on]).any())


def _too_few(est: PPIEstimate, min_human: int) -> str:
    return (
        f"{est.n_human} human labels on {est.n_human_clusters} stems, fewer than the "
        f"{min_human} a calibrated headline needs"
    )


def _shift(ref: _Arm, level: float) -> tuple[float, float] | None:
    """The reference slice's correction ``mean(Y − f)`` and its SE (``None``: no slice)."""
    if _slice_note(ref) is not None:
        return None
    est = ppi_mean(
        np.zeros(ref.f.size), ref.h - ref.f, inclusion=ref.p, cluster=ref.stem, lam=0.0,
        level=level,
    )  # fmt: skip
    return est.estimate, est.se


def calibrate_group(
    study: str,
    group: str,
    table: pd.DataFrame,
    reference: str,
    drift: Mapping[str, Mapping[str, Mapping[str, Any]]],
    humans: DispositionHumans,
    *,
    bootstrap: int = 2000,
    seed: int | None = 0,
    min_human: int = MIN_HUMAN_LABELS,
    level: float = 0.95,
) -> list[CalibratedRate]:
    """Calibrated aligned rates and drifts of one reasoning group.

    Args:
        study: The disposition study.
        group: The reasoning group's name.
        table: Its validated rate table (:func:`study.disposition.analysis.stored_rate_table`).
        reference: The group's reference arm.
        drift: ``battery -> arm -> {drift_pp, ci_low, ci_high}``: the model-only drift
            of the group's statistics (``DispositionStats.to_dict()["batteries"][b]["arms"]``).
        humans: The pulled slice (:func:`human_slice`).
        bootstrap: Stem resamples of the model-only rate's interval.
        seed: Their seed.
        min_human: Human labels (and stems) a calibrated headline needs.
        level: Interval level.
    """
    from driftlens_core.bootstrap import as_generator

    rng = as_generator(seed)
    first = table[(table["classifier_repeat"] == 0) & np.isfinite(table["aligned"])]
    rows: list[CalibratedRate] = []
    for battery, bt in first.groupby("battery", sort=True):
        arms = {str(a): _arm(study, part, humans) for a, part in bt.groupby("arm", sort=True)}
        ref = arms.get(reference)
        shift = _shift(ref, level) if ref is not None else None
        rates = {}
        for name, arm in arms.items():
            rates[name] = _rate_row(
                group, str(battery), name, arm, ref if name != reference else None, shift,
                rng, bootstrap, min_human, level,
            )  # fmt: skip
        for name, arm in arms.items():
            rate, transport = rates[name]
            rows.append(rate)
            if name == reference or ref is None:
                continue
            d = drift.get(str(battery), {}).get(name)
            if d is None or d.get("drift_pp") is None:
                continue
            # a calibrated drift needs both arms' own calibrated rates (not transported)
            both = rate.headline == "calibrated" and rates[reference][0].headline == "calibrated"
            rows.append(
                _drift_row(
                    group, str(battery), name, arm, ref, d, transport, both, min_human, level
                )
            )
    return rows


def _rate_row(
    group: str,
    battery: str,
    name: str,
    arm: _Arm,
    ref: _Arm | None,
    shift: tuple[float, float] | None,
    rng: np.random.Generator,
    bootstrap: int,
    min_human: int,
    level: float,
) -> tuple[CalibratedRate, TransportCheck | None]:
    cm = cluster_mean(arm.stem, arm.f, n_boot=bootstrap, seed=rng)
    note = _slice_note(arm)
    est = None
    if note is None:
        est = ppi_mean_jackknife(arm.f, arm.h, inclusion=arm.p, cluster=arm.stem, level=level)
    headline: Headline = "model-only"
    transport: TransportCheck | None = None
    cal = cal_ci = None
    if est is not None and enough_humans(est, min_human):
        headline, cal, cal_ci = "calibrated", est.estimate, est.ci
    elif ref is not None and shift is not None and not _no_probabilities(arm):
        # the reference's correction, tested on this arm's own few labels
        on = np.isfinite(arm.h)
        transport = transport_check(
            arm.f, arm.h, shift=shift[0], shift_se=shift[1],
            inclusion=arm.p if on.any() else None, cluster=arm.stem, min_human=MIN_TRANSPORT,
            level=level,
        )  # fmt: skip
        if transport.verdict == "pass":
            headline = "calibrated (transported)"
            cal = float(arm.f.mean()) + shift[0]
            # normal interval: the classifier rate's stem-bootstrap SE and the shift's SE
            half = 1.96 * math.sqrt(cm.se**2 + shift[1] ** 2)
            cal_ci = (cal - half, cal + half)
            note = f"the reference arm's correction {shift[0]:+.3f} (transport check passed)"
        elif transport.verdict == "fail":
            note = (
                f"warning: the transport check failed (residual {transport.residual:+.3f} on "
                f"{transport.n_human} human labels): the classifier errs differently on this "
                "arm, so the reference's correction does not carry over; the model-only "
                "headline is kept"
            )
        else:
            note = (
                f"{transport.n_human} human labels, fewer than the {MIN_TRANSPORT} a transport "
                "check needs: the model-only headline is kept"
            )
    elif est is not None:
        note = _too_few(est, min_human) + ": the model-only headline is kept"
    return (
        CalibratedRate(
            group=group,
            battery=battery,
            arm=name,
            what="aligned_rate",
            headline=headline,
            model_only=cm.mean,
            model_only_ci=(cm.ci_low, cm.ci_high),
            calibrated=cal if cal is not None else (est.estimate if est is not None else None),
            calibrated_ci=cal_ci if cal_ci is not None else (est.ci if est is not None else None),
            human_only=est.human_only if est is not None else None,
            human_only_ci=est.human_only_ci if est is not None else None,
            lam=est.lam if est is not None else None,
            n_items=int(arm.f.size),
            n_human=arm.n_human,
            n_human_stems=est.n_human_clusters if est is not None else 0,
            transport=transport.verdict if transport is not None else None,
            note=note,
            rectifier_sd=est.rectifier_sd if est is not None else None,
            model_sd=est.model_sd if est is not None else None,
        ),
        transport,
    )


def _drift_row(
    group: str,
    battery: str,
    name: str,
    arm: _Arm,
    ref: _Arm,
    d: Mapping[str, Any],
    transport: TransportCheck | None,
    both_calibrated: bool,
    min_human: int,
    level: float,
) -> CalibratedRate:
    note = _slice_note(arm) or _slice_note(ref)
    est = None
    if note is None:
        est = ppi_difference_jackknife(arm.ppi(), ref.ppi(), level=level)
    enough = est is not None and both_calibrated
    if not enough and note is None and est is not None:
        note = (
            f"{arm.n_human} + {ref.n_human} human labels (arm + reference): a calibrated drift "
            f"needs each arm's own calibrated rate (at least {min_human} human labels on as "
            "many of its stems, or on every stem it answered): the model-only headline is kept"
        )
    if not enough and transport is not None and transport.verdict == "fail":
        note = (
            "warning: the transport check failed: the classifier errs differently on this "
            "arm than on the reference, so the model-only drift carries that difference"
            + (f"; {note}" if note else "")
        )
    pp = 100.0
    return CalibratedRate(
        group=group,
        battery=battery,
        arm=name,
        what="drift_pp",
        headline="calibrated" if enough else "model-only",
        model_only=float(d["drift_pp"]),
        model_only_ci=(float(d.get("ci_low") or math.nan), float(d.get("ci_high") or math.nan)),
        calibrated=pp * est.estimate if est is not None else None,
        calibrated_ci=(pp * est.ci[0], pp * est.ci[1]) if est is not None else None,
        human_only=pp * est.human_only if est is not None else None,
        human_only_ci=(
            (pp * est.human_only_ci[0], pp * est.human_only_ci[1]) if est is not None else None
        ),
        lam=est.lam if est is not None else None,
        n_items=int(arm.f.size + ref.f.size),
        n_human=arm.n_human + ref.n_human,
        n_human_stems=est.n_human_clusters if est is not None else 0,
        transport=transport.verdict if transport is not None else None,
        note=note,
    )


def calibrated_disposition(
    study: str,
    groups: Sequence[tuple[str, pd.DataFrame, str, Mapping[str, Any]]],
    *,
    session: Session,
    bootstrap: int = 2000,
    seed: int | None = 0,
    min_human: int = MIN_HUMAN_LABELS,
) -> CalibratedDisposition | None:
    """Calibrated rates and drifts of a study's groups (``None``: no check pulled).

    Args:
        study: The disposition study.
        groups: ``(group, rate table, reference, stats batteries dict)`` per group.
        session: Database session.
        bootstrap: Stem resamples of the model-only rates' intervals.
        seed: Their seed.
        min_human: Human labels (and stems) a calibrated headline needs.
    """
    humans = human_slice(study, session=session)
    if humans is None or not humans.aligned:
        return None
    notes: list[str] = []
    if humans.unknown_battery:
        notes.append(
            f"{humans.unknown_battery} checked answers belong to a battery whose aligned "
            "category is unknown and are left out"
        )
    if humans.off_scale:
        notes.append(
            f"{humans.off_scale} human votes name no category of their battery (not the "
            "classifier's scale) and are left out"
        )
    rows: list[CalibratedRate] = []
    seen: set[str] = set()
    for group, table, reference, batteries in groups:
        drift = {b: v.get("arms", {}) for b, v in batteries.items()}
        first = table[(table["classifier_repeat"] == 0) & np.isfinite(table["aligned"])]
        seen.update(_keys(study, first))
        rows.extend(
            calibrate_group(
                study, group, table, reference, drift, humans, bootstrap=bootstrap, seed=seed,
                min_human=min_human,
            )
        )  # fmt: skip
    never = sum(1 for k in humans.aligned if k not in seen)
    if never:
        notes.append(
            f"{never} human-checked answers have no classifier category in this analysis and "
            "are left out"
        )
    return CalibratedDisposition(tuple(rows), tuple(notes), min_human)


def _ci_text(point: float | None, ci: tuple[float, float] | None, digits: int) -> str:
    if point is None or ci is None or not math.isfinite(point):
        return "–"
    return f"{point:.{digits}f} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


#: The heading of the report's calibrated section.
CALIBRATED_HEADING = "Calibrated to people (PPI++ from the disposition_check slice)"


def calibrated_frame(cal: CalibratedDisposition) -> pd.DataFrame:
    """The report's calibrated table (rates as shares, drifts in pp)."""
    rows = []
    for r in cal.rows:
        digits = 3 if r.what == "aligned_rate" else 1
        rows.append(
            {
                "group": r.group,
                "battery": r.battery,
                "arm": r.arm,
                "what": r.what,
                "headline": r.headline,
                "model_only": _ci_text(r.model_only, r.model_only_ci, digits),
                "calibrated": _ci_text(r.calibrated, r.calibrated_ci, digits),
                "human_only": _ci_text(r.human_only, r.human_only_ci, digits),
                "lambda": "–" if r.lam is None else f"{r.lam:.2f}",
                "humans": f"{r.n_human} / {r.n_items}",
                "transport": r.transport or "",
                "note": r.note or "",
            }
        )
    return pd.DataFrame(rows)


def calibrated_note(cal: CalibratedDisposition) -> str:
    """The sentence under the report's calibrated table."""
    note = (
        "The classifier's aligned rate and drift beside their prediction-powered estimates "
        "(PPI++, power-tuned lambda, question jackknife over stems, weighted by the slice's "
        "inclusion probabilities) and the human-only values of the same slice. The headline "
        f"is the calibrated one when at least {cal.min_human} answers on as many stems carry "
        "a human category; an arm with fewer borrows the reference arm's correction when a "
        "transport check on its own labels passes; otherwise the model-only one, labelled "
        "as such."
    )
    if cal.notes:
        note += " " + "; ".join(cal.notes) + "."
    return note


def calibrated_lines(cal: CalibratedDisposition | None) -> list[str]:
    """One plain line per drift: the headline, both estimates and the human labels."""
    if cal is None:
        return []
    out = []
    for r in cal.rows:
        if r.what != "drift_pp":
            continue
        head = (
            f"{r.group} / {r.battery} / {r.arm} drift: headline {r.headline} "
            f"({r.n_human} human labels of {r.n_items} answers): calibrated "
            f"{_ci_text(r.calibrated, r.calibrated_ci, 1)} pp, model-only "
            f"{_ci_text(r.model_only, r.model_only_ci, 1)} pp"
        )
        out.append(head if r.note is None else f"{head}; {r.note}")
    return out
