"""LLM judge scores (helpfulness, distraction, acknowledgement)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session, col, select

from storage.models import JudgeScore, Response
from storage.repo._upsert import row_values, upsert
from storage.repo.chunks import id_chunks

JUDGE_SCORE_KEY = ("response_id", "judge_model", "kind")


def upsert_judge_scores(scores: Sequence[JudgeScore], *, session: Session) -> int:
    """Insert judge scores, replacing any with the same (response, judge model, kind)."""
    return upsert(
        session,
        JudgeScore,
        [row_values(s) for s in scores],
        key=JUDGE_SCORE_KEY,
        update=("value", "raw_output", "parse_status", "settings", "created_at"),
    )


def judge_scores_for(
    response_ids: Sequence[int],
    *,
    kind: str | None = None,
    judge_model: str | None = None,
    session: Session,
) -> list[JudgeScore]:
    """Scores of these responses, optionally of one kind and judge."""
    out: list[JudgeScore] = []
    for chunk in id_chunks(response_ids):
        stmt = select(JudgeScore).where(col(JudgeScore.response_id).in_(chunk))
        if kind is not None:
            stmt = stmt.where(JudgeScore.kind == kind)
        if judge_model is not None:
            stmt = stmt.where(JudgeScore.judge_model == judge_model)
        out.extend(session.exec(stmt.order_by(col(JudgeScore.id))))
    return out


def run_judges(run_name: str, *, session: Session) -> list[str]:
    """The judge models that scored some response of a run (sorted; one query).

    Raises:
        NotFoundError: no run of that name.
    """
    from storage.repo.runs import require_run

    run = require_run(run_name, session=session)
    stmt = (
        select(JudgeScore.judge_model)
        .join(Response, col(Response.id) == col(JudgeScore.response_id))
        .where(Response.run_id == run.id)
        .distinct()
    )
    return sorted(str(m) for m in session.exec(stmt))
