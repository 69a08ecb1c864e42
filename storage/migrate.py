"""Alembic, driven from code: the schema's only owner.

The configuration is built here (no ``alembic.ini``) with ``script_location`` resolved from
the installed package, so migrations run from any working directory.

Developers add a revision with::

    .venv/bin/python -m storage.migrate revision -m "add foo"      # autogenerate, then review
    .venv/bin/python -m storage.migrate upgrade [--db URL]
    .venv/bin/python -m storage.migrate current [--db URL]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from storage.engine import make_engine, normalize_url
from storage.errors import ConfigError

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")

#: Key of the PostgreSQL advisory lock that serialises concurrent upgrades.
_PG_LOCK_KEY = 0x0D1F7_1E45


def migration_options(dialect: str) -> dict[str, Any]:
    """Options shared by ``env.py`` and :func:`schema_diff` (batch mode on SQLite)."""
    return {
        "render_as_batch": dialect.startswith("sqlite"),
        "compare_type": True,
        "compare_server_default": False,
    }


def alembic_config(db_url: str | None = None) -> Config:
    """Build the Alembic configuration in code.

    Args:
        db_url: optional URL for commands that open their own connection.
    """
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("version_locations", str(MIGRATIONS_DIR / "versions"))
    cfg.set_main_option("path_separator", "os")
    if db_url:
        cfg.set_main_option("sqlalchemy.url", db_url.replace("%", "%%"))
    return cfg


def _engine(engine_or_url: Engine | str) -> Engine:
    if isinstance(engine_or_url, Engine):
        return engine_or_url
    return make_engine(engine_or_url)


@contextlib.contextmanager
def _sqlite_file_lock(engine_or_url: Engine | str) -> Iterator[None]:
    """Serialise upgrades of one SQLite file across processes (SQLite DDL is not atomic here).

    Taken before the engine exists: its first connection (``make_engine`` checks one) sets
    the file's journal mode, which on a fresh file needs the lock an upgrading process holds
    and fails at once instead of waiting ("database is locked", four processes at once).
    """
    if isinstance(engine_or_url, Engine):
        url = engine_or_url.url
    else:
        try:
            url = normalize_url(engine_or_url)
        except ConfigError:  # _engine() says so in one sentence
            yield
            return
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        yield
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no cross-process lock
        yield
        return
    lock_path = Path(database).expanduser().with_name(Path(database).name + ".migrate.lock")
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def upgrade(engine_or_url: Engine | str, revision: str = "head") -> str | None:
    """Upgrade the database to ``revision`` (default: the latest); a no-op when already there.

    Concurrent callers wait for each other (PostgreSQL advisory lock; a lock file next to an
    SQLite database), so two processes opening a fresh workspace at once do not collide.

    Returns:
        The revision the database is at afterwards.
    """
    cfg = alembic_config()
    with _sqlite_file_lock(engine_or_url):
        engine = _engine(engine_or_url)
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
        return current_revision(engine)


def downgrade(engine_or_url: Engine | str, revision: str) -> str | None:
    """Downgrade the database to ``revision`` (``"base"`` empties it). For tests and repairs."""
    engine = _engine(engine_or_url)
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
    return current_revision(engine)


def current_revision(engine_or_connection: Engine | Connection) -> str | None:
    """The revision the database is at (``None`` for an empty database)."""
    if isinstance(engine_or_connection, Connection):
        return MigrationContext.configure(engine_or_connection).get_current_revision()
    with engine_or_connection.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    """The latest revision shipped with the package."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def schema_diff(engine_or_connection: Engine | Connection) -> list[Any]:
    """Differences between the database schema and ``SQLModel.metadata`` (empty = in sync)."""
    from sqlmodel import SQLModel

    import storage.models  # noqa: F401

    def _diff(conn: Connection) -> list[Any]:
        ctx = MigrationContext.configure(conn, opts=migration_options(conn.dialect.name))
        return list(compare_metadata(ctx, SQLModel.metadata))

    if isinstance(engine_or_connection, Connection):
        return _diff(engine_or_connection)
    with engine_or_connection.connect() as conn:
        return _diff(conn)


def new_revision(message: str, *, autogenerate: bool = True) -> None:
    """Write a new revision file; autogenerated against a scratch SQLite database at head.

    Always review the generated file by hand (Alembic misses renames and some types).
    """
    from storage.engine import dispose_engines, make_engine

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'scratch.db'}"
        engine = make_engine(url)
        upgrade(engine)
        cfg = alembic_config(url)
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.revision(cfg, message=message, autogenerate=autogenerate)
        dispose_engines()


def main(argv: list[str] | None = None) -> int:
    """``python -m storage.migrate upgrade|current|heads|revision``."""
    from storage.settings import resolve_settings

    parser = argparse.ArgumentParser(prog="python -m storage.migrate")
    parser.add_argument("--db", dest="db_url", default=None, help="database URL")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("upgrade", help="upgrade the database to head")
    sub.add_parser("current", help="print the database revision")
    sub.add_parser("heads", help="print the latest shipped revision")
    rev = sub.add_parser("revision", help="write a new (autogenerated) revision")
    rev.add_argument("-m", "--message", required=True)
    rev.add_argument("--empty", action="store_true", help="do not autogenerate")
    args = parser.parse_args(argv)

    if args.cmd == "heads":
        print(head_revision())
        return 0
    if args.cmd == "revision":
        new_revision(args.message, autogenerate=not args.empty)
        return 0
    settings = resolve_settings(db_url=args.db_url)
    if settings.is_sqlite:
        settings.workspace.mkdir(parents=True, exist_ok=True)
    if args.cmd == "upgrade":
        print(upgrade(settings.db_url))
    else:
        from storage.engine import make_engine

        print(current_revision(make_engine(settings.db_url)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
