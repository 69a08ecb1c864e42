"""The workspace: a folder plus a database at the latest schema, and the session opener.

Only the front ends (CLI, Streamlit) open sessions; everything below them receives one
(``*, session``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session

from storage.engine import make_engine
from storage.errors import ConfigError
from storage.migrate import current_revision, head_revision, upgrade
from storage.models import MAIN_TABLES
from storage.settings import Settings, redacted_url

_migrated: set[str] = set()
_migrate_lock = threading.Lock()


@dataclass(frozen=True)
class WorkspaceInfo:
    """What ``driftlens info`` shows: where things are and how much is stored."""

    workspace: Path
    db_url: str
    """The database URL with the password hidden."""
    revision: str | None
    head: str | None
    counts: Mapping[str, int] = field(default_factory=dict)
    """Rows per main table, keyed by table name."""

    @property
    def up_to_date(self) -> bool:
        """Whether the database schema is at the latest shipped revision."""
        return self.revision is not None and self.revision == self.head


def _prepare(settings: Settings) -> Engine:
    """Create the workspace folder (and the SQLite file's folder) and return the engine."""
    try:
        settings.workspace.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"Cannot create the workspace folder {settings.workspace}: {exc.strerror}."
        ) from exc
    if settings.is_sqlite:
        database = make_url(settings.db_url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return make_engine(settings.db_url)


def _ensure_migrated(settings: Settings, engine: Engine, *, force: bool = False) -> None:
    with _migrate_lock:
        if force or settings.db_url not in _migrated:
            upgrade(engine)
            _migrated.add(settings.db_url)


def init_workspace(settings: Settings) -> WorkspaceInfo:
    """Create the workspace folder and bring its database to the latest schema.

    Safe to run again: migrations already applied are skipped.

    Raises:
        ConfigError: the folder cannot be created or the URL is invalid.
        ServiceError: the database server cannot be reached.
    """
    engine = _prepare(settings)
    _ensure_migrated(settings, engine, force=True)
    with Session(engine) as session:
        return workspace_info(session=session, settings=settings)


@contextmanager
def open_workspace_session(settings: Settings, *, migrate: bool = True) -> Iterator[Session]:
    """Open a session on the workspace database; commit on success, roll back on error.

    Args:
        settings: the resolved settings.
        migrate: bring the schema to head first (once per process per URL).

    Objects stay readable after the block (``expire_on_commit=False``).
    """
    engine = _prepare(settings) if migrate else make_engine(settings.db_url)
    if migrate:
        _ensure_migrated(settings, engine)
    session = Session(engine, expire_on_commit=False)
    # Stored file paths are relative to the workspace (storage.paths); the session knows
    # which workspace it belongs to, so a copied workspace reads its own files.
    session.info["workspace"] = settings.workspace
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def table_counts(*, session: Session) -> dict[str, int]:
    """Rows per main table (see ``storage.models.MAIN_TABLES``)."""
    counts: dict[str, int] = {}
    for model in MAIN_TABLES:
        table = model.__table__  # type: ignore[attr-defined]
        counts[str(table.name)] = int(
            session.execute(select(func.count()).select_from(table)).scalar_one()
        )
    return counts


def counts_revision(*, session: Session) -> tuple[int, ...]:
    """A cheap token that changes when rows are added to a main table: each one's largest
    id (an index lookup, where ``COUNT(*)`` reads the whole table). Pages cache
    :func:`table_counts` per token; a deletion alone does not change it."""
    out: list[int] = []
    for model in MAIN_TABLES:
        table = model.__table__  # type: ignore[attr-defined]
        if "id" in table.columns:
            out.append(
                int(session.execute(select(func.coalesce(func.max(table.c.id), 0))).scalar_one())
            )
    return tuple(out)


def workspace_info(*, session: Session, settings: Settings) -> WorkspaceInfo:
    """Describe the workspace behind ``session`` (revision, row counts)."""
    revision = current_revision(session.connection())
    counts = table_counts(session=session) if revision is not None else {}
    return WorkspaceInfo(
        workspace=settings.workspace,
        db_url=redacted_url(settings.db_url),
        revision=revision,
        head=head_revision(),
        counts=counts,
    )


def workspace_engine(settings: Settings) -> Engine:
    """The engine of the workspace database (for maintenance that needs no session)."""
    return _prepare(settings)


def reset_migration_memo() -> None:
    """Forget which URLs were migrated in this process (tests)."""
    with _migrate_lock:
        _migrated.clear()
