"""The response judge's rates calibrated to people: PPI++ from the pulled response studies.

The judge (:mod:`study.reasoning.judges`) scores every response of a run: helpfulness
0–4, and for perturbed responses distraction (1 = the memory changed the reasoning) and
acknowledgement (1 = the response says whether the memory bears on the question). The
``helpfulness`` study's annotators score a slice on the same 0–4 scale; the
``distraction`` study's name the earliest step the memory influenced (``no`` or a step), so
a response's human distraction is the share of its votes naming a step; the
``acknowledgement`` study's answer Yes / No, so its human acknowledgement is the share of
Yes votes. For each criterion with a matching study, the judge's mean over the run
(model-only, 95 % interval over questions) stands beside the prediction-powered mean
(:func:`driftlens_core.ppi.ppi_mean_jackknife`, clustered by question, weighted by the
slice's stored inclusion probabilities) and the human-only mean of the slice.

The headline is the calibrated estimate when at least
:data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` responses on as many questions carry a human
label (:func:`~driftlens_core.ppi.enough_humans`); otherwise the judge's, labelled as such
with one sentence (too few humans, no inclusion probabilities, no study of that criterion
pulled). Human labels on responses the judge never scored and votes off the judge's scale
are left out and counted. The same arms feed ``stats.json`` (:func:`judge_rates_block`), the
drift report and ``driftlens compare`` (:func:`judge_rate_arms`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from sqlmodel import Session

from driftlens_core.ppi import MIN_HUMAN_LABELS, PPIArm, enough_humans, ppi_mean_jackknife
from driftlens_core.rubric import cluster_mean
from storage.repo.judges import run_judges
from study.json_values import json_ready
from study.reasoning.judges import ACKNOWLEDGEMENT, DISTRACTION, HELPFULNESS

#: criterion -> (human study, its question) of the studies that check it.
STUDY_OF: dict[str, tuple[str, str]] = {
    HELPFULNESS: ("helpfulness", "score"),
    DISTRACTION: ("distraction", "step"),
    ACKNOWLEDGEMENT: ("acknowledgement", "acknowledged"),
}
#: The criteria in the order every output lists them.
CRITERIA: tuple[str, ...] = (HELPFULNESS, DISTRACTION, ACKNOWLEDGEMENT)
_HELPFUL_SCALE = {str(k): float(k) for k in range(5)}
_STEPS = {"no", *(str(k) for k in range(1, 7))}
_YES_NO = {"1": 1.0, "0": 0.0}  # the acknowledgement study stores the judge's 1 / 0

#: A criterion's pulled labels: ``(key -> human value, key -> probability, off-scale votes)``.
Pulled = tuple[dict[str, float], dict[str, float], int]


@dataclass(frozen=True)
class CalibratedJudgeRate:
    """One criterion's judge mean and its calibrated estimate (``what`` the criterion)."""

    what: str
    headline: Literal["calibrated", "model-only"]
    model_only: float
    model_only_ci: tuple[float, float]
    calibrated: float | None
    calibrated_ci: tuple[float, float] | None
    human_only: float | None
    human_only_ci: tuple[float, float] | None
    lam: float | None
    n_items: int
    n_human: int
    n_human_questions: int
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as ``None``)."""

        return json_ready(asdict(self))


def _human_value(study: str, votes: list[str]) -> tuple[float | None, int]:
    """The human label of one response and how many votes were off the judge's scale."""
    if study == "helpfulness":
        ok = [_HELPFUL_SCALE[v] for v in votes if v in _HELPFUL_SCALE]
    elif study == "acknowledgement":
        ok = [_YES_NO[v] for v in votes if v in _YES_NO]
    else:
        ok = [float(v != "no") for v in votes if v in _STEPS]
    return (float(np.mean(ok)) if ok else None), len(votes) - len(ok)


def human_labels(study: str, question: str, run: str, *, session: Session) -> Pulled | None:
    """``(key -> human value, key -> inclusion probability, off-scale votes)`` of a run.

    ``None`` when the study was never pulled.
    """
    from annotation.apply import study_aggregate
    from storage.errors import NotFoundError
    from storage.repo import studies as repo

    if repo.latest_study(study, session=session) is None:
        return None
    try:
        _, agg = study_aggregate(study, session=session)
    except NotFoundError:
        return None
    values: dict[str, float] = {}
    inclusion: dict[str, float] = {}
    off = 0
    for it in agg.items:
        if str(it.payload.get("run", "")) != run:
            continue
        o = it.outcome(question)
        if o is None or not o.votes:
            continue
        v, bad = _human_value(study, [x for _, x in o.votes])
        off += bad
        if v is None:
            continue
        values[it.key] = v
        p = it.payload.get("inclusion_probability")
        if isinstance(p, int | float) and 0 < float(p) <= 1:
            inclusion[it.key] = float(p)
    return values, inclusion, off


@dataclass(frozen=True)
class JudgedItems:
    """One criterion's judged responses of a run: the judge's values, keys and questions."""

    what: str
    f: np.ndarray
    keys: tuple[str, ...]
    questions: np.ndarray


def judged_items(run: str, judge: str, *, session: Session) -> dict[str, JudgedItems]:
    """Per criterion the judge scored on the run: its values, response keys and questions."""
    from annotation.tasks import response_key
    from storage.repo.judges import judge_scores_for
    from storage.repo.studies import select_responses

    rows = select_responses(session=session, run=run)
    key_of = {
        int(r.id or 0): (response_key(run_row.name, q.external_id, r.condition, r.sample), q)
        for r, run_row, _m, q, _p in rows
    }
    scores = judge_scores_for(list(key_of), judge_model=judge, session=session)
    out: dict[str, JudgedItems] = {}
    for what in CRITERIA:
        got = [
            (s.response_id, float(s.value))
            for s in scores
            if s.kind == what and s.value is not None
        ]
        if got:
            out[what] = JudgedItems(
                what,
                np.array([v for _, v in got]),
                tuple(key_of[int(rid)][0] for rid, _ in got),
                np.array([key_of[int(rid)][1].external_id for rid, _ in got]),
            )
    return out


def _arm(items: JudgedItems, pulled: Pulled, notes: list[str]) -> tuple[PPIArm | None, str | None]:
    """The criterion's PPI arm from the pulled labels, or ``None`` with the sentence why."""
    study = STUDY_OF[items.what][0]
    values, inclusion, off = pulled
    if off:
        notes.append(f"{off} {study} votes are off the judge's scale and left out")
    scored = set(items.keys)
    never = sum(1 for k in values if k not in scored)
    if never:
        notes.append(
            f"{never} {study} labels are on responses this judge never scored and are left out"
        )
    h = np.array([values.get(k, np.nan) for k in items.keys])
    p = np.array([inclusion.get(k, np.nan) for k in items.keys])
    on = np.isfinite(h)
    if int(on.sum()) < 2:
        return None, f"{int(on.sum())} human label(s): the model-only headline is kept"
    if np.isnan(p[on]).any():
        return None, (
            "the human slice has no stored inclusion probabilities: the model-only headline is kept"
        )
    return PPIArm(items.f, h, p, items.questions), None


def _pulled(
    what: str,
    run: str,
    humans: Mapping[str, Pulled | None] | None,
    *,
    session: Session,
) -> Pulled | None:
    if humans is not None:
        return humans.get(what)
    study, question = STUDY_OF[what]
    return human_labels(study, question, run, session=session)


def judge_rate_arms(
    run: str,
    judge: str,
    *,
    session: Session,
    humans: Mapping[str, Pulled | None] | None = None,
) -> dict[str, PPIArm]:
    """Per criterion with a usable pulled slice: its PPI arm (``driftlens compare``'s input).

    The arm is exactly what :func:`calibrated_judge_rates` estimates the headline from.
    """
    out: dict[str, PPIArm] = {}
    for what, items in judged_items(run, judge, session=session).items():
        pulled = _pulled(what, run, humans, session=session)
        if pulled is None:
            continue
        arm, _ = _arm(items, pulled, [])
        if arm is not None:
            out[what] = arm
    return out


def calibrated_judge_rates(
    run: str,
    judge: str,
    *,
    session: Session,
    bootstrap: int = 2000,
    seed: int | None = 0,
    min_human: int = MIN_HUMAN_LABELS,
    humans: Mapping[str, Pulled | None] | None = None,
) -> tuple[tuple[CalibratedJudgeRate, ...], tuple[str, ...]]:
    """Every criterion's judge mean beside its calibrated estimate, and the notes.

    Args:
        run: The generation run.
        judge: The judge model spec whose stored scores are read.
        session: Database session.
        bootstrap: Question resamples of the model-only intervals.
        seed: Their seed.
        min_human: Human labels (and questions) a calibrated headline needs.
        humans: Per criterion the pulled labels (:func:`human_labels`); ``None`` reads them.
    """
    rng = np.random.default_rng(seed)
    out: list[CalibratedJudgeRate] = []
    notes: list[str] = []
    for what, items in judged_items(run, judge, session=session).items():
        cm = cluster_mean(items.questions, items.f, n_boot=bootstrap, seed=rng)
        est = None
        note: str | None = None
        pulled = _pulled(what, run, humans, session=session)
        if pulled is None:
            study = STUDY_OF[what][0]
            note = f"no {study} study pulled: the judge's (model-only) rate is the headline"
        else:
            arm, note = _arm(items, pulled, notes)
            if arm is not None:
                est = ppi_mean_jackknife(
                    arm.model, arm.human, inclusion=arm.inclusion, cluster=arm.cluster
                )
                if not enough_humans(est, min_human):
                    note = (
                        f"{est.n_human} human labels on {est.n_human_clusters} questions, "
                        f"fewer than the {min_human} a calibrated headline needs: the "
                        "model-only headline is kept"
                    )
        out.append(
            CalibratedJudgeRate(
                what=what,
                headline="calibrated" if est is not None and note is None else "model-only",
                model_only=cm.mean,
                model_only_ci=(cm.ci_low, cm.ci_high),
                calibrated=est.estimate if est is not None else None,
                calibrated_ci=est.ci if est is not None else None,
                human_only=est.human_only if est is not None else None,
                human_only_ci=est.human_only_ci if est is not None else None,
                lam=est.lam if est is not None else None,
                n_items=int(items.f.size),
                n_human=est.n_human if est is not None else 0,
                n_human_questions=est.n_human_clusters if est is not None else 0,
                note=note,
            )
        )
    return tuple(out), tuple(notes)


def judge_rates_block(
    runs: Sequence[str],
    *,
    session: Session,
    bootstrap: int = 2000,
    seed: int | None = 0,
    min_human: int = MIN_HUMAN_LABELS,
) -> dict[str, Any] | None:
    """``stats.json``'s ``calibrated_judges``: every judge's rates of every run, or ``None``.

    ``None`` when no helpfulness, distraction or acknowledgement study was pulled for any
    of the runs, or no judge scored them (``stats.json`` then stays what ``driftlens
    stats`` writes). Rows carry ``run`` and
    ``judge`` beside :class:`CalibratedJudgeRate`'s fields; ``notes`` are prefixed with them.
    """
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for run in runs:
        humans = {w: human_labels(*STUDY_OF[w], run, session=session) for w in CRITERIA}
        if all(v is None for v in humans.values()):
            continue  # no response study pulled: stats.json stays `driftlens stats`'s
        for judge in run_judges(run, session=session):
            rates, more = calibrated_judge_rates(
                run, judge, session=session, bootstrap=bootstrap, seed=seed,
                min_human=min_human, humans=humans,
            )  # fmt: skip
            rows.extend({"run": run, "judge": judge, **r.to_dict()} for r in rates)
            notes.extend(f"{run}, {judge}: {n}" for n in more)
    if not rows:
        return None
    return {"rows": rows, "notes": notes, "min_human": min_human}


def judge_rates_frame(block: Mapping[str, Any]) -> pd.DataFrame:
    """The report's table of :func:`judge_rates_block` (one text cell per column)."""
    recs = []
    for r in block.get("rows", []):
        recs.append(
            {
                "run": str(r["run"]),
                "judge": str(r["judge"]),
                "criterion": str(r["what"]),
                "headline": str(r["headline"]),
                "model-only [95% CI]": _ci(r.get("model_only"), _pair(r.get("model_only_ci"))),
                "calibrated [95% CI]": _ci(r.get("calibrated"), _pair(r.get("calibrated_ci"))),
                "human-only [95% CI]": _ci(r.get("human_only"), _pair(r.get("human_only_ci"))),
                "human labels / responses": f"{r['n_human']} / {r['n_items']}",
                "note": str(r.get("note") or ""),
            }
        )
    return pd.DataFrame(recs)


def _pair(v: Any) -> tuple[float, float] | None:
    if v is None or len(v) != 2 or v[0] is None or v[1] is None:
        return None
    return float(v[0]), float(v[1])


def _ci(point: float | None, ci: tuple[float, float] | None) -> str:
    if point is None or ci is None or not math.isfinite(float(point)):
        return "–"
    return f"{point:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def calibrated_lines(rates: tuple[CalibratedJudgeRate, ...]) -> list[str]:
    """One plain line per criterion: the headline, both estimates, the human labels."""
    out = []
    for r in rates:
        head = (
            f"{r.what}: headline {r.headline} ({r.n_human} human labels of {r.n_items} "
            f"responses): calibrated {_ci(r.calibrated, r.calibrated_ci)}, model-only "
            f"{_ci(r.model_only, r.model_only_ci)}"
        )
        out.append(head if r.note is None else f"{head}; {r.note}")
    return out
