"""INSERT … ON CONFLICT for SQLite and PostgreSQL (atomic, no savepoints needed)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, SQLModel, select

from storage.types import utcnow

_CHUNK = 500

M = TypeVar("M", bound=SQLModel)


def row_values(obj: SQLModel, *, exclude: Iterable[str] = ("id",)) -> dict[str, Any]:
    """Column values of a (possibly unsaved) row object, filling unset timestamps."""
    table: Table = obj.__table__  # type: ignore[attr-defined]
    skip = set(exclude)
    values: dict[str, Any] = {}
    for column in table.columns:
        if column.name in skip:
            continue
        value = getattr(obj, column.name, None)
        if value is None and column.name in ("created_at", "updated_at", "pulled_at"):
            value = utcnow()
        values[column.name] = value
    return values


def get_or_create(
    session: Session, model: type[M], where: ColumnElement[bool] | bool, create: Callable[[], M]
) -> M:
    """The first ``model`` row matching ``where``; else ``create()``, added and flushed."""
    row = session.exec(select(model).where(where)).first()
    if row is not None:
        return row
    row = create()
    session.add(row)
    session.flush()
    return row


def upsert(
    session: Session,
    model: type[SQLModel],
    rows: Sequence[Mapping[str, Any]],
    *,
    key: Sequence[str],
    update: Sequence[str] | None = None,
) -> int:
    """Insert ``rows``; on a key conflict update the ``update`` columns (or do nothing).

    ``updated_at`` is refreshed on update when the table has it. Pending ORM changes are
    flushed first, and loaded objects of ``model`` are expired afterwards so they never show
    pre-upsert values. Returns the number of rows sent.
    """
    if not rows:
        return 0
    session.flush()
    table: Table = model.__table__  # type: ignore[attr-defined]
    dialect = session.get_bind().dialect.name
    insert_fn: Any
    if dialect == "sqlite":
        insert_fn = sqlite.insert
    elif dialect == "postgresql":
        insert_fn = postgresql.insert
    else:  # pragma: no cover - only SQLite and PostgreSQL are supported
        raise NotImplementedError(f"upsert is not implemented for {dialect}")
    for start in range(0, len(rows), _CHUNK):
        chunk = [dict(r) for r in rows[start : start + _CHUNK]]
        stmt = insert_fn(table)
        if update:
            set_: dict[str, Any] = {name: stmt.excluded[name] for name in update}
            if "updated_at" in table.columns and "updated_at" not in set_:
                set_["updated_at"] = utcnow()
            stmt = stmt.on_conflict_do_update(index_elements=list(key), set_=set_)
        else:
            stmt = stmt.on_conflict_do_nothing(index_elements=list(key))
        session.execute(stmt, chunk)
    for obj in list(session.identity_map.values()):
        if isinstance(obj, model):
            session.expire(obj)
    return len(rows)
