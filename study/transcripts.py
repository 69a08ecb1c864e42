"""A run's stored answers as a reader reads them: the question, the memory line, the steps,
the answer and every judge's verdicts with its stated reason (the ``show`` commands of the
instruments whose runs store :class:`~storage.models.Response` rows).

Everything here but the counts is model output or imported text: whoever shows it escapes
it (the CLI prints it through :class:`app.cli.console.SafeConsole`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.errors import InputError, NotFoundError
from storage.models import BASELINE_CONDITION, JudgeScore, Perturbation, Question, Response
from storage.repo.runs import require_run
from study.strict_json import reply_reason


@dataclass(frozen=True)
class Verdict:
    """One judge's scores of a response (``None``: unscored) and its stated reason."""

    judge: str
    scores: tuple[tuple[str, float | None], ...]
    reason: str


@dataclass(frozen=True)
class Transcript:
    """One stored response of a run, with its judges' verdicts."""

    question_id: str
    question: str
    condition: str
    sample: int
    memory: str
    steps: tuple[str, ...]
    answer: str | None
    text: str | None
    parse_status: str
    verdicts: tuple[Verdict, ...]


def run_transcripts(
    run: str, *, session: Session, limit: int = 10, question: str | None = None
) -> tuple[list[Transcript], int]:
    """The first ``limit`` responses of ``run`` (question, condition, sample order) and how
    many the run (or the question) holds.

    Args:
        run: The run (a :class:`~storage.models.GenerationRun`).
        session: The workspace session.
        limit: Responses to return (at least 1).
        question: Only this question's responses (its external id).

    Raises:
        NotFoundError: no such run, or no such question in the run.
        InputError: ``limit`` below 1.
    """
    if limit < 1:
        raise InputError("--limit must be at least 1.")
    row = require_run(run, session=session)
    stmt = (
        select(Response, Question.external_id, Question.text, Perturbation.text)
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Perturbation, col(Perturbation.id) == col(Response.perturbation_id), isouter=True)
        .where(Response.run_id == row.id)
    )
    if question is not None:
        stmt = stmt.where(Question.external_id == question)
    total = int(session.exec(select(func.count()).select_from(stmt.subquery())).one())
    if question is not None and not total:
        raise NotFoundError(f"Run {run!r} holds no response to question {question!r}.")
    # the run's key order, read a page at a time in SQL (a run can hold many answers)
    shown = session.exec(
        stmt.order_by(
            col(Response.question_id), col(Response.condition), col(Response.sample)
        ).limit(limit)
    ).all()
    verdicts = _verdicts([r.id for r, *_ in shown if r.id is not None], session=session)
    out = [
        Transcript(
            question_id=str(qid),
            question=str(qtext),
            condition=r.condition,
            sample=r.sample,
            memory="" if r.condition == BASELINE_CONDITION else str(memory or ""),
            steps=tuple(r.steps or ()),
            answer=r.answer,
            text=r.text,
            parse_status=r.parse_status,
            verdicts=verdicts.get(r.id or -1, ()),
        )
        for r, qid, qtext, memory in shown
    ]
    return out, total


def _verdicts(ids: Sequence[int], *, session: Session) -> dict[int, tuple[Verdict, ...]]:
    """Each response's verdicts, one per judge, criteria in the order they were stored."""
    if not ids:
        return {}
    scores = session.exec(
        select(JudgeScore)
        .where(col(JudgeScore.response_id).in_(list(ids)))
        .order_by(col(JudgeScore.judge_model), col(JudgeScore.id))
    ).all()
    grouped: dict[int, dict[str, list[JudgeScore]]] = {}
    for s in scores:
        grouped.setdefault(s.response_id, {}).setdefault(s.judge_model, []).append(s)
    return {
        rid: tuple(
            Verdict(
                judge=judge,
                scores=tuple((s.kind, s.value) for s in rows),
                reason=reply_reason(rows[0].raw_output),
            )
            for judge, rows in by_judge.items()
        )
        for rid, by_judge in grouped.items()
    }
