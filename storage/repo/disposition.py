"""Repository functions of the disposition instrument (arms, responses, scores)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlmodel import Session, col, select

from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
from storage.errors import InputError, NotFoundError
from storage.repo._upsert import row_values, upsert
from storage.repo.chunks import id_chunks

_RESPONSE_KEY = ("arm_id", "battery", "stem", "paraphrase", "sample")
_SCORE_KEY = ("response_id", "kind", "repeat", "judge_model")


def add_arm(arm: DispositionArm, *, session: Session, replace: bool = False) -> DispositionArm:
    """Store a new arm (or, with ``replace``, update one that has no responses yet).

    Raises:
        InputError: the arm exists (and ``replace`` is off or it already has responses).
    """
    old = get_arm(arm.study, arm.name, session=session)
    if old is not None:
        has = session.exec(
            select(DispositionResponse.id).where(DispositionResponse.arm_id == old.id).limit(1)
        ).first()
        if not replace or has is not None:
            raise InputError(
                f"Arm {arm.name!r} already exists in study {arm.study!r}"
                + (" and has responses." if has is not None else "; pass --replace to change it.")
            )
        for name, value in row_values(arm, exclude=("id", "created_at", "updated_at")).items():
            setattr(old, name, value)
        session.add(old)
        session.flush()
        return old
    session.add(arm)
    session.flush()
    return arm


def get_arm(study: str, name: str, *, session: Session) -> DispositionArm | None:
    """The arm ``name`` of ``study``, if any."""
    return session.exec(
        select(DispositionArm).where(DispositionArm.study == study, DispositionArm.name == name)
    ).first()


def list_arms(*, session: Session, study: str | None = None) -> list[DispositionArm]:
    """Arms in creation order (of one study, or all)."""
    stmt = select(DispositionArm)
    if study is not None:
        stmt = stmt.where(DispositionArm.study == study)
    return list(session.exec(stmt.order_by(col(DispositionArm.id))))


def list_studies(*, session: Session) -> list[str]:
    """Names of the studies that have arms."""
    return sorted(set(session.exec(select(DispositionArm.study))))


def require_arms(study: str, *, session: Session) -> list[DispositionArm]:
    """The arms of ``study``.

    Raises:
        NotFoundError: the study has no arms.
    """
    arms = list_arms(session=session, study=study)
    if not arms:
        raise NotFoundError(
            f"Study {study!r} has no arms; add some with `driftlens disposition arms add`."
        )
    return arms


def upsert_responses(rows: Sequence[Mapping[str, Any]], *, session: Session) -> int:
    """Insert or replace responses by (arm, battery, stem, paraphrase, sample)."""
    if not rows:
        return 0
    update = [k for k in rows[0] if k not in _RESPONSE_KEY]
    return upsert(session, DispositionResponse, rows, key=_RESPONSE_KEY, update=update)


def response_keys(arm_id: int, *, session: Session) -> set[tuple[str, str, int, int]]:
    """Keys ``(battery, stem, paraphrase, sample)`` an arm has settled.

    A row whose request failed (``status = "error"``) is not settled: a rerun asks it
    again (after an outage the study could otherwise never be completed). Exhausted rows
    are settled: their re-asks were spent on an answer that ran out of tokens.
    """
    rows = session.exec(
        select(
            DispositionResponse.battery,
            DispositionResponse.stem,
            DispositionResponse.paraphrase,
            DispositionResponse.sample,
        ).where(DispositionResponse.arm_id == arm_id, DispositionResponse.status != "error")
    )
    return {(b, s, int(p), int(k)) for b, s, p, k in rows}


def arm_responses(arm_ids: Sequence[int], *, session: Session) -> list[DispositionResponse]:
    """Every response of the given arms, arm by arm (by arm id) in plan order.

    Plan order is the stored ``position``, whatever order the answers were stored in (one
    process, or shards in parallel); rows stored before positions existed (revision 0014)
    come first, in id order, which is how every study was read before.
    """
    if not arm_ids:
        return []
    stmt = select(DispositionResponse).where(col(DispositionResponse.arm_id).in_(list(arm_ids)))
    return sorted(session.exec(stmt), key=_read_order)


def responses_by_id(ids: Collection[int], *, session: Session) -> list[DispositionResponse]:
    """The responses with these ids, in read order (:func:`arm_responses`)."""
    wanted = sorted(set(ids))
    rows: list[DispositionResponse] = []
    for part in id_chunks(wanted):
        rows += session.exec(
            select(DispositionResponse).where(col(DispositionResponse.id).in_(part))
        )
    return sorted(rows, key=_read_order)


def _read_order(r: DispositionResponse) -> tuple[int, int, int, int]:
    if r.position is None:
        return (0, 0, 0, r.id or 0)
    return (1, r.arm_id, r.position, r.id or 0)


def upsert_scores(rows: Sequence[Mapping[str, Any]], *, session: Session) -> int:
    """Insert or replace scores by (response, kind, repeat, judge model)."""
    if not rows:
        return 0
    update = [k for k in rows[0] if k not in _SCORE_KEY]
    return upsert(session, DispositionScore, rows, key=_SCORE_KEY, update=update)


def scores_for(
    response_ids: Sequence[int], *, session: Session, kind: str = "category"
) -> list[DispositionScore]:
    """Scores of one kind for the given responses (chunked for SQLite's parameter limit)."""
    out: list[DispositionScore] = []
    for chunk in id_chunks(response_ids):
        stmt = select(DispositionScore).where(
            col(DispositionScore.response_id).in_(chunk),
            DispositionScore.kind == kind,
        )
        out.extend(session.exec(stmt))
    return out
