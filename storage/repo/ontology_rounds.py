"""Queries of the ontology studio: the labels of a round's responses, by labeler spec."""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session, col, select

from storage.models import Response, StepLabel
from storage.repo.chunks import id_chunks


def labels_of(
    response_ids: Sequence[int],
    *,
    labeler_ids: Sequence[int],
    ontology_version_id: int,
    repeat: int = 0,
    session: Session,
) -> list[StepLabel]:
    """Labels of these responses by these labelers under one version, ordered by key."""
    out: list[StepLabel] = []
    for chunk in id_chunks(response_ids):
        stmt = (
            select(StepLabel)
            .where(
                col(StepLabel.response_id).in_(chunk),
                col(StepLabel.labeler_id).in_(list(labeler_ids)),
                StepLabel.ontology_version_id == ontology_version_id,
                StepLabel.repeat == repeat,
            )
            .order_by(
                col(StepLabel.response_id), col(StepLabel.step_index), col(StepLabel.labeler_id)
            )
        )
        out.extend(session.exec(stmt))
    return out


def responses_by_id(response_ids: Sequence[int], *, session: Session) -> dict[int, Response]:
    """Response rows by id."""
    out: dict[int, Response] = {}
    for chunk in id_chunks(response_ids):
        stmt = select(Response).where(col(Response.id).in_(chunk))
        for row in session.exec(stmt):
            assert row.id is not None
            out[row.id] = row
    return out
