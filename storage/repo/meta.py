"""Workspace key/value metadata (never secrets)."""

from __future__ import annotations

from sqlmodel import Session

from storage.models import WorkspaceMeta
from storage.types import utcnow


def get_meta(key: str, *, session: Session) -> str | None:
    """The stored value for ``key``."""
    row = session.get(WorkspaceMeta, key)
    return row.value if row is not None else None


def set_meta(key: str, value: str, *, session: Session) -> None:
    """Store ``value`` under ``key`` (replacing it)."""
    row = session.get(WorkspaceMeta, key)
    if row is None:
        session.add(WorkspaceMeta(key=key, value=value))
    elif row.value != value:
        row.value = value
        row.updated_at = utcnow()
        session.add(row)
    session.flush()
