"""Unsaved page edits (drafts), keyed by page and object, so no edit is lost on navigation."""

from __future__ import annotations

from collections.abc import Mapping

from sqlmodel import Session, select

from storage.models import Draft
from storage.types import utcnow


def get_draft(page: str, object_key: str, *, session: Session) -> dict[str, str]:
    """The draft fields of one object on one page (empty when there is no draft)."""
    row = _row(page, object_key, session=session)
    return dict(row.fields) if row is not None else {}


def save_draft_field(
    page: str, object_key: str, field: str, value: str | None, *, session: Session
) -> dict[str, str]:
    """Set (or, with ``None``, drop) one field of a draft; an emptied draft is deleted.

    Returns:
        The draft's fields after the change.
    """
    row = _row(page, object_key, session=session)
    fields = dict(row.fields) if row is not None else {}
    if value is None:
        fields.pop(field, None)
    else:
        fields[field] = value
    if not fields:
        if row is not None:
            session.delete(row)
            session.flush()
        return {}
    if row is None:
        row = Draft(page=page, object_key=object_key, fields=fields)
    else:
        row.fields = fields  # reassigned: JSON columns do not track in-place changes
        row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return fields


def discard_draft(page: str, object_key: str, *, session: Session) -> bool:
    """Delete a draft (after its edits were saved); ``True`` when there was one."""
    row = _row(page, object_key, session=session)
    if row is None:
        return False
    session.delete(row)
    session.flush()
    return True


def drafts_of_page(page: str, *, session: Session) -> Mapping[str, dict[str, str]]:
    """Every draft of a page: ``object_key -> fields``."""
    rows = session.exec(select(Draft).where(Draft.page == page)).all()
    return {r.object_key: dict(r.fields) for r in rows}


def _row(page: str, object_key: str, *, session: Session) -> Draft | None:
    stmt = select(Draft).where(Draft.page == page, Draft.object_key == object_key)
    return session.exec(stmt).first()
