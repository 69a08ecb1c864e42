"""The same migrations and round trip against a real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlmodel import Session, SQLModel

from storage import migrate
from storage.engine import make_engine
from storage.settings import resolve_settings
from storage.workspace import init_workspace, open_workspace_session
from tests.storage._world import round_trip

pytestmark = pytest.mark.postgres


def test_postgres_migrations_and_round_trip(pg_url: str) -> None:
    engine = make_engine(pg_url)
    assert migrate.current_revision(engine) is None
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.upgrade(pg_url) == migrate.head_revision()  # second run: no-op
    assert set(inspect(engine).get_table_names()) == set(SQLModel.metadata.tables) | {
        "alembic_version"
    }
    assert migrate.schema_diff(engine) == []
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    with Session(engine, expire_on_commit=False) as session:
        round_trip(session)


def test_postgres_workspace(pg_url: str, tmp_path: Path) -> None:
    settings = resolve_settings(workspace=tmp_path / "ws", db_url=pg_url)
    info = init_workspace(settings)
    assert info.up_to_date and info.counts["question"] == 0
    with open_workspace_session(settings) as session:
        from storage.models import Question

        session.add(Question(external_id="pg", text="t"))
    assert init_workspace(settings).counts["question"] == 1
