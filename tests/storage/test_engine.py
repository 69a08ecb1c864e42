"""Engine factory: SQLite pragmas, foreign keys, caching, clear errors."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from storage.engine import make_engine, normalize_url
from storage.errors import ConfigError, ServiceError
from storage.models import Response, WorkspaceMeta


def test_sqlite_wal_and_foreign_keys(engine: Engine) -> None:
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar_one() >= 1000


def test_foreign_key_violation_raises(session: Session) -> None:
    session.add(Response(run_id=12345, question_id=67890, condition="baseline", sample=0))
    with pytest.raises(IntegrityError):
        session.flush()


def test_engine_is_cached_per_url(sqlite_url: str, tmp_path: Path) -> None:
    assert make_engine(sqlite_url) is make_engine(sqlite_url)
    assert make_engine(sqlite_url) is not make_engine(f"sqlite:///{tmp_path / 'other.db'}")


def test_sqlite_engine_shared_across_threads(engine: Engine) -> None:
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            with Session(engine) as s:
                s.add(WorkspaceMeta(key=f"k{i}", value=str(i)))
                s.commit()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM workspace_meta")).scalar_one() == 8


def test_in_memory_sqlite_keeps_one_database() -> None:
    engine = make_engine("sqlite://")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM t")).scalar_one() == 0


def test_datetimes_come_back_aware_utc(session: Session) -> None:
    local = datetime(2026, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    session.add(WorkspaceMeta(key="t", value="v", updated_at=local))
    session.commit()
    session.expire_all()
    row = session.get(WorkspaceMeta, "t")
    assert row is not None
    assert row.updated_at == local
    assert row.updated_at.tzinfo is not None and row.updated_at.utcoffset() == timedelta(0)
    assert row.updated_at.hour == 10 and row.updated_at.tzinfo == UTC


def test_invalid_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="Invalid database URL"):
        make_engine("not a url")
    with pytest.raises(ConfigError, match="Unsupported database"):
        make_engine("mysql://u:pw@127.0.0.1/x")


def test_unreachable_server_is_a_service_error_without_password() -> None:
    with pytest.raises(ServiceError) as info:
        make_engine("postgresql+psycopg://user:s3cret-pw@127.0.0.1:1/db")
    message = str(info.value)
    assert "s3cret-pw" not in message
    assert "***" in message and message.startswith("Cannot connect to the database")
    assert "\n" not in message


def test_postgres_urls_use_psycopg3() -> None:
    assert normalize_url("postgresql://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgresql+psycopg://u@h/db").drivername == "postgresql+psycopg"
