"""Memory conflicts' side of judge robustness: a stratified sample re-judged, as matrices.

The item is one judged answer; its verdict is the rubric's five scores D1–D5 and the
headline value the total (defined where all five apply, as in
:mod:`study.conflicts.analysis`). The stored judgement of the primary judge is column 0;
re-judgements of the same judge (``attempt`` = new cache entry and seed) and the
alternative judges follow. Nothing is stored here: the service keeps the summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlmodel import Session

from llm.specs import ModelSpec
from llm.types import ChatBackend
from storage.errors import InputError
from storage.models import Response
from storage.repo.conflicts import banks_by_question
from storage.repo.runs import list_responses, require_run
from study.conflicts.actions import rubric_total
from study.conflicts.items import ConflictInstance
from study.conflicts.score import (
    DIMENSIONS,
    MAX_TOKENS,
    Verdict,
    judge_case,
    judge_messages,
    parse_verdict,
    repair_message,
    stored_verdicts,
)
from study.judge_robustness.result import RobustnessResult
from study.judge_robustness.sampling import (
    Rejudging,
    SampledJudgements,
    stratified_sample,
)
from study.judge_robustness.service import RobustnessAsk
from study.strict_json import run_with_repair


@dataclass(frozen=True)
class Judgements(SampledJudgements):
    """Scores of the sampled answers: ``(n_answers, n_judgements, 5)``, NaN = none."""

    scores: np.ndarray

    def totals(self) -> np.ndarray:
        """``(n_answers, n_judgements)`` D1–D5 totals under the not-applicable rule
        (:func:`study.conflicts.actions.rubric_total`; NaN where there is none)."""
        n, k, d = self.scores.shape
        return rubric_total(self.scores.reshape(n * k, d)).reshape(n, k)


def stored_judges(run_name: str, *, session: Session) -> list[str]:
    """The judges that scored the run's answers."""
    run = require_run(run_name, session=session)
    assert run.id is not None
    responses = list_responses(run.id, session=session)
    return sorted({judge for _rid, judge in stored_verdicts(responses, session=session)})


def sample_answers(
    run_name: str, primary: str, *, sample: int, seed: int, session: Session
) -> tuple[list[Response], list[str], dict[int, dict[str, float | None]]]:
    """A sample of the run's answers the primary judge scored, stratified by conflict type.

    Every type gets its share of ``sample`` (at least one answer), drawn with ``seed``.

    Raises:
        InputError: the primary judge scored no answer of the run.
    """
    run = require_run(run_name, session=session)
    assert run.id is not None
    responses = [r for r in list_responses(run.id, session=session) if r.parse_status == "ok"]
    verdicts = {
        rid: v
        for (rid, j), v in stored_verdicts(responses, session=session).items()
        if j == primary
    }
    scored = [r for r in responses if r.id in verdicts and _total(verdicts[r.id]) is not None]
    if not scored:
        raise InputError(
            f"{primary} scored no answer of run {run_name!r} with a total (D1 and D2 "
            "applying); judge the run first (driftlens conflicts judge)."
        )
    banks = banks_by_question(sorted({r.question_id for r in scored}), session=session)
    by_type: dict[str, list[Response]] = {}
    for r in scored:
        bank = banks.get(r.question_id)
        if bank is not None:
            by_type.setdefault(bank.conflict_type, []).append(r)
    picked, strata = stratified_sample(by_type, sample=sample, seed=seed)
    return picked, strata, verdicts


def _total(v: dict[str, float | None]) -> float | None:
    vals = [np.nan if (x := v.get(f"conflict_{d}")) is None else x for d in DIMENSIONS]
    total = float(rubric_total(np.array([vals], dtype=float))[0])
    return total if np.isfinite(total) else None


def rejudge(
    responses: Sequence[Response],
    judge: ModelSpec,
    *,
    attempt: int | None,
    session: Session,
    concurrency: int = 16,
    backend: ChatBackend | None = None,
) -> np.ndarray:
    """``(n, 5)`` scores of ``responses`` by ``judge`` (NaN where unreadable/failed)."""
    banks = banks_by_question(sorted({r.question_id for r in responses}), session=session)
    cases = [
        judge_case(ConflictInstance.model_validate(banks[r.question_id].content), r)
        for r in responses
    ]
    out = np.full((len(responses), len(DIMENSIONS)), np.nan)

    def parse(i: int, text: str) -> Verdict:
        c = cases[i]
        return parse_verdict(
            text, high_risk=bool(c["high_risk"]), observable=c["observability"] != "None"
        )

    def on_answer(i: int, value: Verdict | None, _raws: list[str], _e: Exception | None) -> None:
        if value is not None:
            for j, d in enumerate(DIMENSIONS):
                s = value.scores.get(d)
                out[i, j] = np.nan if s is None else float(s)

    run_with_repair(
        backend or judge,
        [judge_messages(c) for c in cases],
        max_tokens=MAX_TOKENS,
        parse=parse,
        repair_message=lambda _i, exc: repair_message(exc),
        on_answer=on_answer,
        session=session,
        concurrency=concurrency,
        attempt=attempt,
    )
    return out


def conflicts_judgements(run_name: str, rejudging: Rejudging) -> Judgements:
    """The primary judge's stored scores, its re-judgements and the alternatives' scores."""
    session, primary = rejudging.session, rejudging.primary
    picked, strata, verdicts = sample_answers(
        run_name, primary, sample=rejudging.sample, seed=rejudging.seed, session=session
    )
    stored = np.array(
        [[verdicts[r.id].get(f"conflict_{d}") for d in DIMENSIONS] for r in picked if r.id],
        dtype=float,
    )
    columns, labels = rejudging.asked(stored, picked, rejudge)
    return Judgements(
        response_ids=tuple(int(r.id) for r in picked if r.id is not None),
        strata=tuple(strata),
        labels=tuple(labels),
        scores=np.stack(columns, axis=1),
    )


def run_robustness(run: str, ask: RobustnessAsk) -> RobustnessResult:
    """The rubric judge's robustness for a conflicts run (the plugin's ``robustness``)."""
    ask.require_judge_variance()
    got = conflicts_judgements(
        run, ask.asked(stored_judges(run, session=ask.session), f"Run {run!r}")
    )
    return ask.summary(
        "conflicts",
        run,
        got,
        values=got.totals(),
        verdicts=got.scores,
        measure="rubric total D1-D5 (0-20) per answer",
        midpoint=10.0,
        scale=(0.0, 20.0),
    )
