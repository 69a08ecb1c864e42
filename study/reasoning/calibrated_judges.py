"""The response judge's rates calibrated to people: PPI++ from the pulled response studies.

The judge (:mod:`study.reasoning.judges`) scores every response of a run: helpfulness
0–4, and for perturbed responses distraction (1 = the memory changed the reasoning) and
acknowledgement. The ``helpfulness`` study's annotators score a slice on the same 0–4
scale; the ``distraction`` study's name the earliest step the memory influenced (``no`` or a
step), so a response's human distraction is the share of its votes naming a step. For
each criterion with a matching study, the judge's mean over the run (model-only, 95 %
interval over questions) stands beside the prediction-powered mean
(:func:`driftlens_core.ppi.ppi_mean_jackknife`, clustered by question, weighted by the
slice's stored inclusion probabilities) and the human-only mean of the slice.

The headline is the calibrated estimate when at least
:data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` responses on as many questions carry a human
label; otherwise the judge's, labelled as such with one sentence (too few humans, no
inclusion probabilities, no human study of that criterion — acknowledgement has none).
Human labels on responses the judge never scored and votes off the judge's scale are left
out and counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from sqlmodel import Session

from driftlens_core.ppi import MIN_HUMAN_LABELS, ppi_mean_jackknife
from driftlens_core.rubric import cluster_mean
from study.json_values import json_ready
from study.reasoning.judges import ACKNOWLEDGEMENT, DISTRACTION, HELPFULNESS

#: criterion -> (human study, its question) of the studies that check it.
STUDY_OF: dict[str, tuple[str, str]] = {
    HELPFULNESS: ("helpfulness", "score"),
    DISTRACTION: ("distraction", "step"),
}
_HELPFUL_SCALE = {str(k): float(k) for k in range(5)}
_STEPS = {"no", *(str(k) for k in range(1, 7))}


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
    else:
        ok = [float(v != "no") for v in votes if v in _STEPS]
    return (float(np.mean(ok)) if ok else None), len(votes) - len(ok)


def human_labels(
    study: str, question: str, run: str, *, session: Session
) -> tuple[dict[str, float], dict[str, float], int] | None:
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


def calibrated_judge_rates(
    run: str,
    judge: str,
    *,
    session: Session,
    bootstrap: int = 2000,
    seed: int | None = 0,
    min_human: int = MIN_HUMAN_LABELS,
    humans: Mapping[str, tuple[dict[str, float], dict[str, float], int] | None] | None = None,
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
    from annotation.tasks import response_key
    from storage.repo.judges import judge_scores_for
    from storage.repo.studies import select_responses

    rng = np.random.default_rng(seed)
    rows = select_responses(session=session, run=run)
    key_of = {
        int(r.id or 0): (response_key(run_row.name, q.external_id, r.condition, r.sample), q)
        for r, run_row, _m, q, _p in rows
    }
    scores = judge_scores_for(list(key_of), judge_model=judge, session=session)
    out: list[CalibratedJudgeRate] = []
    notes: list[str] = []
    for what in (HELPFULNESS, DISTRACTION, ACKNOWLEDGEMENT):
        got = [
            (s.response_id, float(s.value))
            for s in scores
            if s.kind == what and s.value is not None
        ]
        if not got:
            continue
        f = np.array([v for _, v in got])
        keys = [key_of[int(rid)][0] for rid, _ in got]
        qs = np.array([key_of[int(rid)][1].external_id for rid, _ in got])
        cm = cluster_mean(qs, f, n_boot=bootstrap, seed=rng)
        est = None
        note: str | None = None
        if what not in STUDY_OF:
            note = f"no human study checks {what}: the judge's (model-only) rate is the headline"
        else:
            study, question = STUDY_OF[what]
            pulled = (
                (humans or {}).get(what)
                if humans is not None
                else human_labels(study, question, run, session=session)
            )
            if pulled is None:
                note = f"no {study} study pulled: the judge's (model-only) rate is the headline"
            else:
                values, inclusion, off = pulled
                if off:
                    notes.append(f"{off} {study} votes are off the judge's scale and left out")
                scored = set(keys)
                never = sum(1 for k in values if k not in scored)
                if never:
                    notes.append(
                        f"{never} {study} labels are on responses this judge never scored "
                        "and are left out"
                    )
                h = np.array([values.get(k, np.nan) for k in keys])
                p = np.array([inclusion.get(k, np.nan) for k in keys])
                on = np.isfinite(h)
                if int(on.sum()) < 2:
                    note = f"{int(on.sum())} human label(s): the model-only headline is kept"
                elif np.isnan(p[on]).any():
                    note = (
                        "the human slice has no stored inclusion probabilities: the "
                        "model-only headline is kept"
                    )
                else:
                    est = ppi_mean_jackknife(f, h, inclusion=p, cluster=qs)
                    if est.n_human < min_human or est.n_human_clusters < min(
                        min_human, est.n_clusters
                    ):
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
                n_items=int(f.size),
                n_human=est.n_human if est is not None else 0,
                n_human_questions=est.n_human_clusters if est is not None else 0,
                note=note,
            )
        )
    return tuple(out), tuple(notes)


def _ci(point: float | None, ci: tuple[float, float] | None) -> str:
    if point is None or ci is None or not math.isfinite(point):
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
