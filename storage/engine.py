"""Engine factory: one cached engine per URL, SQLite tuned for concurrent readers.

SQLite gets WAL journaling (readers never block the writer) with infrequent checkpoints,
16 KiB pages for new files, ``foreign_keys=ON`` (off by default in SQLite), a busy timeout
(writers wait instead of failing) and ``check_same_thread=False`` (Streamlit and thread
pools share the engine). PostgreSQL is
reached through psycopg 3 (``postgresql+psycopg://``); plain ``postgresql://`` and
``postgres://`` URLs are rewritten to that driver.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from storage.errors import ConfigError, ServiceError
from storage.settings import redacted_url

#: Milliseconds an SQLite writer waits for the lock before giving up.
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: Page size of new SQLite files (existing files keep theirs until a VACUUM).
SQLITE_PAGE_SIZE = 16_384
#: WAL pages between automatic checkpoints (64 MiB at 16 KiB pages).
SQLITE_WAL_PAGES = 4_096
#: Size the WAL file is truncated back to after a checkpoint.
SQLITE_WAL_LIMIT_BYTES = 64 * 1024 * 1024

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def normalize_url(db_url: str) -> URL:
    """Parse ``db_url`` and pick our drivers (psycopg 3 for PostgreSQL).

    Raises:
        ConfigError: the URL cannot be parsed or names an unsupported database.
    """
    try:
        url = make_url(db_url)
    except (ArgumentError, ValueError) as exc:
        raise ConfigError(
            f"Invalid database URL {redacted_url(db_url)!r}: expected e.g. "
            "sqlite:///path/to/driftlens.db or postgresql+psycopg://user@host/db."
        ) from exc
    backend = url.get_backend_name()
    if backend == "postgres" or (
        backend == "postgresql"
        and ("+" not in url.drivername or url.drivername.endswith("psycopg2"))
    ):
        url = url.set(drivername="postgresql+psycopg")
    elif backend not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"Unsupported database {backend!r} in {redacted_url(db_url)!r}: "
            "use sqlite:/// or postgresql+psycopg://."
        )
    return url


def _is_memory(url: URL) -> bool:
    return url.database in (None, "", ":memory:") or bool(url.query.get("mode") == "memory")


def _switch_to_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL``, waiting up to the busy timeout for the file's lock.

    Switching a fresh file to WAL needs a lock another process may hold (it is creating the
    tables); SQLite then answers "database is locked" at once instead of through the busy
    handler, so the connection waits here as every other statement does.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_pragmas(engine: Engine, *, memory: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            if not memory:
                # 16 KiB pages: a response row (~1.5 KB) no longer leaves most of a 4 KiB
                # page empty. Only takes effect when the file is created (before WAL).
                cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
                _switch_to_wal(cursor)
                cursor.execute("PRAGMA synchronous=NORMAL")
                # Checkpoint every SQLITE_WAL_PAGES pages instead of 1,000: the hot index
                # pages are copied into the database once per checkpoint, so fewer,
                # larger checkpoints stop rewriting the same pages over and over; the
                # size limit truncates the WAL file again afterwards.
                cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_WAL_PAGES}")
                cursor.execute(f"PRAGMA journal_size_limit={SQLITE_WAL_LIMIT_BYTES}")
        finally:
            cursor.close()


def _build(url: URL) -> Engine:
    shown = redacted_url(url.render_as_string(hide_password=False))
    try:
        if url.get_backend_name() == "sqlite":
            memory = _is_memory(url)
            kwargs: dict[str, Any] = {
                "connect_args": {
                    "check_same_thread": False,
                    "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
                }
            }
            if memory:
                # One shared connection, or every new connection sees an empty database.
                kwargs["poolclass"] = StaticPool
            engine = create_engine(url, **kwargs)
            _sqlite_pragmas(engine, memory=memory)
        else:
            engine = create_engine(
                url,
                pool_pre_ping=True,
                connect_args={"connect_timeout": 10},
            )
    except (NoSuchModuleError, ImportError) as exc:
        raise ConfigError(
            f"No database driver for {shown!r}: install the 'postgres' extra (psycopg)."
        ) from exc
    except (ArgumentError, SQLAlchemyError) as exc:
        raise ConfigError(f"Invalid database URL {shown!r}: {_first_line(exc)}.") from exc
    return engine


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    line = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return line.rstrip(".")


def check_connection(engine: Engine) -> None:
    """Open and close one connection.

    Raises:
        ServiceError: the database cannot be reached (message has the password redacted).
    """
    shown = redacted_url(engine.url.render_as_string(hide_password=False))
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except (DBAPIError, SQLAlchemyError, OSError) as exc:
        reason = _first_line(exc)
        password = engine.url.password
        if password:
            reason = reason.replace(str(password), "***")
        raise ServiceError(f"Cannot connect to the database at {shown}: {reason}.") from exc


def make_engine(db_url: str, *, check: bool = True) -> Engine:
    """Return the engine for ``db_url``, creating and caching it on first use.

    Args:
        db_url: an SQLAlchemy URL (``sqlite:///…`` or ``postgresql+psycopg://…``).
        check: connect once before caching, so an unreachable server fails here with a
            clear message rather than deep inside the first query.

    Raises:
        ConfigError: the URL is invalid or its driver is missing.
        ServiceError: the server is unreachable or refuses the connection.
    """
    with _lock:
        cached = _engines.get(db_url)
        if cached is not None:
            return cached
    url = normalize_url(db_url)
    engine = _build(url)
    if check:
        try:
            check_connection(engine)
        except ServiceError:
            engine.dispose()
            raise
    with _lock:
        # Another thread may have won the race; keep the first engine.
        existing = _engines.setdefault(db_url, engine)
    if existing is not engine:
        engine.dispose()
    return existing


def dispose_engines() -> None:
    """Dispose and forget every cached engine (tests, and before forking workers)."""
    with _lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.dispose()
