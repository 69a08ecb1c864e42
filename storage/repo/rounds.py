"""Refinement-loop rounds, their sampled responses, and rewrite proposals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.models import LabelingRound, RewriteProposal, RoundResponse
from storage.repo._upsert import upsert
from storage.repo.lookup import require_row
from storage.types import utcnow


def next_round_number(*, session: Session) -> int:
    """One more than the highest round number (1 for the first round)."""
    highest = session.exec(select(func.max(LabelingRound.number))).one()
    return int(highest or 0) + 1


def create_round(
    *,
    ontology_version_id: int,
    run_id: int,
    sample_size: int,
    seed: int,
    labelers: Sequence[str],
    number: int | None = None,
    session: Session,
) -> LabelingRound:
    """Open a new round (numbered automatically unless ``number`` is given)."""
    row = LabelingRound(
        number=number if number is not None else next_round_number(session=session),
        ontology_version_id=ontology_version_id,
        run_id=run_id,
        sample_size=sample_size,
        seed=seed,
        labelers=list(labelers),
        status="pending",
    )
    session.add(row)
    session.flush()
    return row


def get_round(number: int, *, session: Session) -> LabelingRound | None:
    """The round with this number."""
    return session.exec(select(LabelingRound).where(LabelingRound.number == number)).first()


def latest_round(*, session: Session) -> LabelingRound | None:
    """The round with the highest number."""
    stmt = select(LabelingRound).order_by(col(LabelingRound.number).desc()).limit(1)
    return session.exec(stmt).first()


def list_rounds(*, session: Session) -> list[LabelingRound]:
    """Every round in number order."""
    return list(session.exec(select(LabelingRound).order_by(col(LabelingRound.number))))


def update_round(
    round_id: int,
    *,
    status: str | None = None,
    metrics: Mapping[str, Any] | None = None,
    session: Session,
) -> LabelingRound:
    """Set a round's status and/or metrics."""
    row = require_row(session, LabelingRound, round_id, what="Labeling round")
    if status is not None:
        row.status = status
    if metrics is not None:
        row.metrics = dict(metrics)
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return row


def add_round_responses(round_id: int, response_ids: Iterable[int], *, session: Session) -> int:
    """Attach responses to a round (duplicates ignored); returns how many were sent."""
    rows = [{"round_id": round_id, "response_id": rid} for rid in dict.fromkeys(response_ids)]
    return upsert(session, RoundResponse, rows, key=("round_id", "response_id"))


def round_response_ids(round_id: int, *, session: Session) -> list[int]:
    """The responses sampled into a round, in id order."""
    stmt = (
        select(RoundResponse.response_id)
        .where(RoundResponse.round_id == round_id)
        .order_by(col(RoundResponse.response_id))
    )
    return list(session.exec(stmt))


def list_proposals(
    *, session: Session, status: str | None = None, round_id: int | None = None
) -> list[RewriteProposal]:
    """Rewrite proposals, newest first."""
    stmt = select(RewriteProposal)
    if status is not None:
        stmt = stmt.where(RewriteProposal.status == status)
    if round_id is not None:
        stmt = stmt.where(RewriteProposal.round_id == round_id)
    return list(session.exec(stmt.order_by(col(RewriteProposal.id).desc())))


def decide_proposal(
    proposal_id: int,
    *,
    status: str,
    def_a_new: str | None = None,
    def_b_new: str | None = None,
    resulting_version_id: int | None = None,
    session: Session,
) -> RewriteProposal:
    """Record the researcher's decision; edited definitions set ``edited``."""
    row = require_row(session, RewriteProposal, proposal_id, what="Rewrite proposal")
    if def_a_new is not None and def_a_new != row.def_a_new:
        row.def_a_new, row.edited = def_a_new, True
    if def_b_new is not None and def_b_new != row.def_b_new:
        row.def_b_new, row.edited = def_b_new, True
    row.status = status
    row.resulting_version_id = resulting_version_id
    row.decided_at = utcnow()
    session.add(row)
    session.flush()
    return row
