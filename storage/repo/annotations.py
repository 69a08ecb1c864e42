"""Label Studio mirror: studies, tasks, annotators, annotations, curation votes.

Sync is idempotent and keyed on Label Studio ids; raw payloads are kept and an unchanged
annotation is never rewritten (house rule 6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlmodel import Session, col, select

from storage.models import Annotator, CurationVote, HumanAnnotation, Study, StudyTask
from storage.repo._upsert import get_or_create, row_values, upsert
from storage.repo.chunks import id_chunks
from storage.types import utcnow

UpsertStatus = Literal["inserted", "updated", "unchanged"]


@dataclass(frozen=True)
class AnnotationUpsert:
    """The stored annotation and what the upsert did to it."""

    annotation: HumanAnnotation
    status: UpsertStatus


# --------------------------------------------------------------------------- studies


def create_study(
    name: str,
    *,
    ls_project_id: int | None = None,
    ls_url: str | None = None,
    title: str | None = None,
    config_hash: str | None = None,
    session: Session,
) -> Study:
    """Record a study (``name`` is the study kind, see ``STUDY_KIND_VALUES``)."""
    row = Study(
        name=name, ls_project_id=ls_project_id, ls_url=ls_url, title=title, config_hash=config_hash
    )
    session.add(row)
    session.flush()
    return row


def get_study_by_project(ls_project_id: int, *, session: Session) -> Study | None:
    """The study mirrored from this Label Studio project."""
    return session.exec(select(Study).where(Study.ls_project_id == ls_project_id)).first()


def list_studies(*, session: Session, name: str | None = None) -> list[Study]:
    """Studies (of one kind when given), newest first."""
    stmt = select(Study)
    if name is not None:
        stmt = stmt.where(Study.name == name)
    return list(session.exec(stmt.order_by(col(Study.id).desc())))


def upsert_study_task(
    study_id: int,
    external_key: str,
    *,
    payload: Mapping[str, Any],
    ls_task_id: int | None = None,
    session: Session,
) -> StudyTask:
    """The task for ``external_key`` in a study, created or refreshed.

    ``payload`` is replaced only when it differs; ``ls_task_id`` is set once known.
    """
    row = session.exec(
        select(StudyTask).where(
            StudyTask.study_id == study_id, StudyTask.external_key == external_key
        )
    ).first()
    if row is None:
        row = StudyTask(
            study_id=study_id,
            external_key=external_key,
            payload=dict(payload),
            ls_task_id=ls_task_id,
        )
        session.add(row)
    else:
        if row.payload != dict(payload):
            row.payload = dict(payload)
        if ls_task_id is not None and row.ls_task_id != ls_task_id:
            row.ls_task_id = ls_task_id
        session.add(row)
    session.flush()
    return row


def list_study_tasks(study_id: int, *, session: Session) -> list[StudyTask]:
    """A study's tasks in id order."""
    stmt = select(StudyTask).where(StudyTask.study_id == study_id).order_by(col(StudyTask.id))
    return list(session.exec(stmt))


def get_task_by_ls_id(ls_task_id: int, *, session: Session) -> StudyTask | None:
    """The task mirrored from this Label Studio task id."""
    return session.exec(select(StudyTask).where(StudyTask.ls_task_id == ls_task_id)).first()


# ------------------------------------------------------------------------ annotators


def get_or_create_annotator(
    ls_user_id: int, *, email: str | None = None, session: Session
) -> Annotator:
    """The annotator for a Label Studio user id; the e-mail is refreshed when given."""
    row = get_or_create(
        session,
        Annotator,
        Annotator.ls_user_id == ls_user_id,
        lambda: Annotator(ls_user_id=ls_user_id, email=email),
    )
    if email is not None and row.email != email:
        row.email = email
        session.add(row)
        session.flush()
    return row


# ----------------------------------------------------------------------- annotations


def upsert_human_annotation(
    *,
    ls_annotation_id: int,
    study_task_id: int,
    annotator_id: int | None,
    result: Any,
    lead_time: float | None = None,
    ls_created_at: datetime | None = None,
    ls_updated_at: datetime | None = None,
    session: Session,
) -> AnnotationUpsert:
    """Mirror one Label Studio annotation, keyed on ``ls_annotation_id``.

    An annotation whose content (result, lead time, annotator, task, LS update time) is
    unchanged is left exactly as stored, ``pulled_at`` included; a changed one is
    updated in place (Label Studio is the source of truth for human work).
    """
    # What Label Studio says of the annotation: a new row is made of it, a stored one compared.
    new: dict[str, Any] = {
        "study_task_id": study_task_id,
        "annotator_id": annotator_id,
        "result": result,
        "lead_time": lead_time,
        "ls_created_at": ls_created_at,
        "ls_updated_at": ls_updated_at,
    }
    row = session.exec(
        select(HumanAnnotation).where(HumanAnnotation.ls_annotation_id == ls_annotation_id)
    ).first()
    if row is None:
        row = HumanAnnotation(ls_annotation_id=ls_annotation_id, **new)
        session.add(row)
        session.flush()
        return AnnotationUpsert(row, "inserted")
    changed = {k: v for k, v in new.items() if not _same(getattr(row, k), v)}
    if not changed:
        return AnnotationUpsert(row, "unchanged")
    for k, v in changed.items():
        setattr(row, k, v)
    row.pulled_at = utcnow()
    session.add(row)
    session.flush()
    return AnnotationUpsert(row, "updated")


def _same(old: Any, new: Any) -> bool:
    if isinstance(old, datetime) and isinstance(new, datetime):
        return _as_utc(old) == _as_utc(new)
    return bool(old == new)


def _as_utc(value: datetime) -> datetime:
    # Naive datetimes are taken as UTC, as storage.types.UTCDateTime does.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def list_annotations(study_id: int, *, session: Session) -> list[tuple[StudyTask, HumanAnnotation]]:
    """Every annotation of a study with its task, in task then annotation order."""
    stmt = (
        select(StudyTask, HumanAnnotation)
        .join(HumanAnnotation, col(HumanAnnotation.study_task_id) == col(StudyTask.id))
        .where(StudyTask.study_id == study_id)
        .order_by(col(StudyTask.id), col(HumanAnnotation.ls_annotation_id))
    )
    return [(task, ann) for task, ann in session.exec(stmt)]


# ---------------------------------------------------------------------- curation votes


def upsert_curation_votes(votes: Sequence[CurationVote], *, session: Session) -> int:
    """Insert votes, replacing the vote of the same (question, criterion, annotator)."""
    return upsert(
        session,
        CurationVote,
        [row_values(v) for v in votes],
        key=("question_id", "criterion", "annotator"),
        update=("vote", "source", "human_annotation_id"),
    )


def votes_for_questions(
    question_ids: Sequence[int], *, session: Session
) -> dict[int, list[CurationVote]]:
    """Votes per question id (questions without votes omitted)."""
    out: dict[int, list[CurationVote]] = {}
    for chunk in id_chunks(question_ids):
        stmt = (
            select(CurationVote)
            .where(col(CurationVote.question_id).in_(chunk))
            .order_by(col(CurationVote.question_id), col(CurationVote.id))
        )
        for vote in session.exec(stmt):
            out.setdefault(vote.question_id, []).append(vote)
    return out
