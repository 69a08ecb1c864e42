"""Reasoning drift's response judge under judge robustness: a sample of judged answers
re-judged (helpfulness, distraction, acknowledgement; ``driftlens judge``).

The item is one response of the run with a readable stored helpfulness score; the sample is
stratified by condition class (``none``: the baseline answers). Its verdict is the three
criteria (distraction and acknowledgement only asked of a perturbed answer, so NaN on a
baseline one and skipped by the flip rate) and its headline value the helpfulness score
(0-4, midpoint 2), the judge's mean that ``driftlens judge`` reports. Column 0 is the stored
verdicts of the primary judge; its resamples (``attempt``: their own cache entries and
seeds) and every alternative judge follow, asked exactly as
:func:`~study.reasoning.judges.judge_run` asks (same prompt, strict parse, one repair).
Nothing is stored here: the shared service keeps the summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlmodel import Session, col, select

from llm.specs import ModelSpec
from storage.errors import InputError
from storage.models import Response
from storage.repo.judges import judge_scores_for, run_judges
from storage.repo.runs import require_run
from study.judge_robustness.result import RobustnessResult
from study.judge_robustness.sampling import Rejudging, SampledJudgements, stratified_sample
from study.judge_robustness.service import RobustnessAsk
from study.reasoning.judges import (
    ACKNOWLEDGEMENT,
    DISTRACTION,
    HELPFULNESS,
    JudgeCase,
    ask_judge,
    build_judge_messages,
    run_cases,
)

#: The verdict's dimensions, in the order of the arrays (helpfulness is the headline).
CRITERIA: tuple[str, ...] = (HELPFULNESS, DISTRACTION, ACKNOWLEDGEMENT)
#: Stratum of a baseline answer (it saw no memory).
BASELINE_STRATUM = "none"
MEASURE = "helpfulness (0-4) per response, by the response judge"


@dataclass(frozen=True)
class ResponseJudgements(SampledJudgements):
    """Verdicts of the sampled answers: ``(n_answers, n_judgements, 3)``, NaN = none."""

    scores: np.ndarray

    def helpfulness(self) -> np.ndarray:
        """``(n_answers, n_judgements)`` helpfulness scores (the headline value)."""
        return self.scores[:, :, CRITERIA.index(HELPFULNESS)]


def _row(values: dict[str, float | None]) -> list[float]:
    return [np.nan if (v := values.get(k)) is None else float(v) for k in CRITERIA]


def sample_cases(
    run: str, primary: str, *, sample: int, seed: int, session: Session
) -> tuple[list[JudgeCase], list[str], np.ndarray]:
    """A sample of the run's answers ``primary`` scored readably, stratified by class.

    Returns the cases, their strata and their stored ``(n, 3)`` verdicts.

    Raises:
        InputError: ``primary`` stored no readable helpfulness score for the run.
    """
    row = require_run(run, session=session)
    cases = run_cases(run, session=session)
    stored: dict[int, dict[str, float | None]] = {}
    for s in judge_scores_for([c.response_id for c in cases], judge_model=primary,
                              session=session):  # fmt: skip
        stored.setdefault(s.response_id, {})[s.kind] = s.value
    usable = [c for c in cases if stored.get(c.response_id, {}).get(HELPFULNESS) is not None]
    if not usable:
        raise InputError(
            f"{primary} stored no readable helpfulness score for run {run!r}; judge it first "
            f"(driftlens judge --run {run} --model {primary})."
        )
    classes = dict(
        session.exec(
            select(Response.id, Response.condition_class).where(col(Response.run_id) == row.id)
        ).all()
    )
    by_class: dict[str, list[JudgeCase]] = {}
    for c in usable:
        # a baseline answer was asked helpfulness only: its own stratum
        klass = BASELINE_STRATUM if c.kinds == (HELPFULNESS,) else str(classes.get(c.response_id))
        by_class.setdefault(klass, []).append(c)
    picked, strata = stratified_sample(by_class, sample=sample, seed=seed)
    verdicts = np.array([_row(stored[c.response_id]) for c in picked], dtype=float)
    return picked, strata, verdicts


def rejudge(
    cases: Sequence[JudgeCase],
    judge: ModelSpec,
    *,
    attempt: int | None,
    session: Session,
    concurrency: int = 16,
) -> np.ndarray:
    """``(n, 3)`` verdicts of ``cases`` by ``judge`` now (NaN: not asked, unreadable or failed)."""
    out = np.full((len(cases), len(CRITERIA)), np.nan)

    def on_answer(i: int, value: dict[str, int] | None, _raws: list[str], _e: object) -> None:
        if value is not None:
            out[i] = _row({k: float(v) for k, v in value.items()})

    ask_judge(
        judge,
        cases,
        [build_judge_messages(c) for c in cases],
        on_answer=on_answer,
        session=session,
        concurrency=concurrency,
        attempt=attempt,
    )
    return out


def response_judgements(run: str, rejudging: Rejudging) -> ResponseJudgements:
    """The primary judge's stored verdicts, its re-judgements and the alternatives'."""
    session = rejudging.session
    picked, strata, stored = sample_cases(
        run, rejudging.primary, sample=rejudging.sample, seed=rejudging.seed, session=session
    )
    columns, labels = rejudging.asked(stored, picked, rejudge)
    return ResponseJudgements(
        response_ids=tuple(c.response_id for c in picked),
        strata=tuple(strata),
        labels=tuple(labels),
        scores=np.stack(columns, axis=1),
    )


def response_judge_robustness(run: str, ask: RobustnessAsk) -> RobustnessResult:
    """The response judge's robustness for a reasoning-drift run.

    Raises:
        InputError: too few judgements per answer, no judge (or several and no
            ``--primary``), or the primary stored no readable score.
    """
    ask.require_judge_variance()
    got = response_judgements(run, ask.asked(run_judges(run, session=ask.session), f"Run {run!r}"))
    return ask.summary(
        "reasoning",
        run,
        got,
        values=got.helpfulness(),
        verdicts=got.scores,
        measure=MEASURE,
        midpoint=2.0,
        scale=(0.0, 4.0),
    )
