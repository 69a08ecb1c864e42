"""Database upkeep: give freed space back and refresh the planner's statistics.

A migration that shrinks rows (e.g. ``0005_normalised_requests``) or a deleted run leaves
free pages inside an SQLite file and dead tuples in PostgreSQL tables; the file does not
shrink by itself. :func:`vacuum_database` runs the database's own command for that
(SQLite ``VACUUM`` then ``ANALYZE``; PostgreSQL ``VACUUM ANALYZE``) and reports the size
before and after.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from storage.errors import ServiceError


@dataclass(frozen=True)
class VacuumResult:
    """What a vacuum did.

    Attributes:
        dialect: ``"sqlite"`` or ``"postgresql"``.
        bytes_before: database size before (SQLite: file + WAL; PostgreSQL:
            ``pg_database_size``).
        bytes_after: the same measure afterwards.
        seconds: wall time of the vacuum itself.
        version: result layout version.
    """

    dialect: str
    bytes_before: int
    bytes_after: int
    seconds: float
    version: int = 1

    @property
    def freed(self) -> int:
        """Bytes given back (negative if the database grew, e.g. PostgreSQL statistics)."""
        return self.bytes_before - self.bytes_after


def _sqlite_files(engine: Engine) -> list[Path]:
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return []
    base = Path(database).expanduser()
    return [base, Path(f"{base}-wal"), Path(f"{base}-shm")]


def database_bytes(engine: Engine) -> int:
    """The size the database takes: SQLite file plus WAL, or ``pg_database_size``."""
    if engine.dialect.name == "sqlite":
        return sum(p.stat().st_size for p in _sqlite_files(engine) if p.exists())
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def vacuum_database(engine: Engine) -> VacuumResult:
    """Rewrite the database compactly and refresh statistics; report sizes.

    SQLite: ``VACUUM`` (rebuilds the file without free pages; needs free disk about the
    size of the database), ``ANALYZE``, then a truncating WAL checkpoint so the size
    measured afterwards is the file's own. PostgreSQL: ``VACUUM ANALYZE`` (marks dead
    space reusable and refreshes statistics without locking readers out; the files
    shrink only where whole trailing pages were freed).

    Raises:
        ServiceError: another connection holds a write lock (SQLite) or the server refuses.
    """
    before = database_bytes(engine)
    t0 = time.perf_counter()
    dialect = engine.dialect.name
    try:
        # Both commands refuse to run inside a transaction: use an autocommit connection.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            if dialect == "sqlite":
                conn.exec_driver_sql("VACUUM")
                conn.exec_driver_sql("ANALYZE")
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            else:
                conn.exec_driver_sql("VACUUM ANALYZE")
    except SQLAlchemyError as exc:  # one sentence for the CLI, never a traceback
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        raise ServiceError(f"Vacuum of the {dialect} database failed: {reason}.") from exc
    seconds = time.perf_counter() - t0
    return VacuumResult(
        dialect=dialect, bytes_before=before, bytes_after=database_bytes(engine), seconds=seconds
    )
