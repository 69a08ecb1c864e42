"""INSERT … ON CONFLICT for SQLite and PostgreSQL (atomic, no savepoints needed).

Bulk writes on PostgreSQL go through ``COPY``: the rows are streamed into a temporary
table with psycopg's ``cursor.copy`` and moved into the real table by one
``INSERT … SELECT … ON CONFLICT`` (``COPY`` itself cannot resolve conflicts). SQLite and
small batches use one multi-row ``INSERT`` per chunk (executemany). Both give the same
rows (``tests/storage/test_bulk_copy.py``); ``bench/bulk_insert.py`` times them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Table, literal_column
from sqlalchemy import column as column_clause
from sqlalchemy import table as table_clause
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, SQLModel, select

from storage.types import utcnow

_CHUNK = 500
#: PostgreSQL batches of at least this many rows are written with COPY (module-level so
#: the benchmark and the parity test can force either path).
COPY_MIN_ROWS = 200
_copy_serial = itertools.count()

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

    def resolve(stmt: Any) -> Any:
        if update:
            set_: dict[str, Any] = {name: stmt.excluded[name] for name in update}
            if "updated_at" in table.columns and "updated_at" not in set_:
                set_["updated_at"] = utcnow()
            return stmt.on_conflict_do_update(index_elements=list(key), set_=set_)
        return stmt.on_conflict_do_nothing(index_elements=list(key))

    if dialect == "postgresql" and _copy_ok(rows):
        _copy_into(session, table, rows, resolve=resolve)
    else:
        for start in range(0, len(rows), _CHUNK):
            chunk = [dict(r) for r in rows[start : start + _CHUNK]]
            session.execute(resolve(insert_fn(table)), chunk)
    for obj in list(session.identity_map.values()):
        if isinstance(obj, model):
            session.expire(obj)
    return len(rows)


def upsert_replacing(
    session: Session,
    model: type[SQLModel],
    rows: Sequence[Mapping[str, Any]],
    *,
    key: Sequence[str],
) -> int:
    """Insert ``rows``, or replace every column but the key of a row already stored.

    ``updated_at`` is set to now; a replaced row keeps its stored ``created_at`` (a row
    without one is stamped now). Returns the number of rows sent.
    """
    if not rows:
        return 0
    now = utcnow()
    rows = [{**r, "created_at": r.get("created_at") or now, "updated_at": now} for r in rows]
    update = [k for k in rows[0] if k not in key and k != "created_at"]
    return upsert(session, model, rows, key=key, update=update)


def _copy_ok(rows: Sequence[Mapping[str, Any]]) -> bool:
    """COPY needs a large enough batch whose rows all name the same columns."""
    if len(rows) < COPY_MIN_ROWS:
        return False
    first = list(rows[0])
    return all(list(r) == first for r in rows)


def _copy_into(
    session: Session,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    resolve: Callable[[Any], Any] | None,
) -> None:
    """PostgreSQL: COPY ``rows`` into a temporary table, then INSERT … SELECT them.

    Values go through each column type's bind processor (JSON serialisation, UTC
    timestamps), exactly as the executemany path sends them. ``resolve`` adds the
    ``ON CONFLICT`` clause (``None``: a plain insert). Rows keep their order (``_ord``).
    """
    conn = session.connection()
    dialect = conn.dialect
    names = list(rows[0])
    processors = [table.c[name].type._cached_bind_processor(dialect) for name in names]
    tmp = f"_copy_{table.name}_{next(_copy_serial)}"
    quoted = ", ".join(dialect.identifier_preparer.quote(n) for n in names)
    target = dialect.identifier_preparer.format_table(table)
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cur:
        # Column types only (no defaults or constraints); dropped at commit at the latest.
        cur.execute(
            f"CREATE TEMP TABLE {tmp} ON COMMIT DROP AS "
            f"SELECT 0::bigint AS _ord, {quoted} FROM {target} WITH NO DATA"
        )
        with cur.copy(f"COPY {tmp} (_ord, {quoted}) FROM STDIN") as copy:
            for i, row in enumerate(rows):
                copy.write_row(
                    [i]
                    + [
                        proc(row[n]) if proc is not None else row[n]
                        for n, proc in zip(names, processors, strict=True)
                    ]
                )
    source = table_clause(tmp, *(column_clause(n) for n in names), column_clause("_ord"))
    stmt: Any = postgresql.insert(table)
    stmt = stmt.from_select(
        names,
        source.select()
        .with_only_columns(*(source.c[n] for n in names))
        .order_by(literal_column("_ord")),
    )
    if resolve is not None:
        stmt = resolve(stmt)
    session.execute(stmt)
    conn.exec_driver_sql(f"DROP TABLE {tmp}")


def bulk_insert(session: Session, model: type[SQLModel], rows: Sequence[Mapping[str, Any]]) -> int:
    """Plain INSERT of many rows (no conflict handling): COPY on PostgreSQL, else executemany.

    Returns the number of rows written.
    """
    if not rows:
        return 0
    table: Table = model.__table__  # type: ignore[attr-defined]
    if session.get_bind().dialect.name == "postgresql" and _copy_ok(rows):
        _copy_into(session, table, rows, resolve=None)
    else:
        from sqlalchemy import insert

        session.execute(insert(table), [dict(r) for r in rows])
    return len(rows)
