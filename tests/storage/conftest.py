"""Fixtures for the storage tests: a migrated SQLite file per test, optional PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage.engine import dispose_engines, make_engine
from storage.migrate import upgrade
from storage.workspace import reset_migration_memo

PG_ENV = "DRIFTLENS_TEST_PG_URL"


@pytest.fixture(autouse=True)
def _fresh_engines() -> Iterator[None]:
    """Every test starts and ends without cached engines or migration memos."""
    dispose_engines()
    reset_migration_memo()
    yield
    dispose_engines()
    reset_migration_memo()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """URL of a not-yet-created SQLite file."""
    return f"sqlite:///{tmp_path / 'test.db'}"


@pytest.fixture
def engine(sqlite_url: str) -> Engine:
    """An engine on a fresh SQLite file migrated to head."""
    eng = make_engine(sqlite_url)
    upgrade(eng)
    return eng


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    """A session on the migrated SQLite database (rolled back at the end)."""
    with Session(engine, expire_on_commit=False) as s:
        yield s
        s.rollback()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_url(request: pytest.FixtureRequest) -> str:
    """A new database's URL: SQLite, then PostgreSQL (skipped as ``pg_url`` says)."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


@pytest.fixture
def pg_url() -> Iterator[str]:
    """URL of a new, empty PostgreSQL database on ``$DRIFTLENS_TEST_PG_URL``'s server.

    Each test gets its own database (created here, dropped afterwards): the server is
    shared by every checkout and test run on the machine, and wiping one common database
    would pull it from under a test running elsewhere at the same moment.

    Skips when the variable is unset, unless ``DRIFTLENS_REQUIRE_POSTGRES=1`` (CI), where a
    missing server is a failure.
    """
    url = os.environ.get(PG_ENV, "").strip()
    if not url:
        reason = (
            f"{PG_ENV} is not set: start a throw-away server with "
            '`eval "$(scripts/ci/postgres.sh)"` to run the PostgreSQL tests'
        )
        if os.environ.get("DRIFTLENS_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    name = f"driftlens_t_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        dispose_engines()  # the test's engines hold connections to the database
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
