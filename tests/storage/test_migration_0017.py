"""Revision 0017 (model roles stored with runs) upgrades a populated database from 0015,
matches today's models, and downgrades with the existing rows intact."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage import migrate
from storage.engine import make_engine
from storage.role_models import ModelRole
from tests.storage._migration_support import BASE_ROWS, insert_at


def _upgrade_populated(engine: Engine) -> None:
    insert_at(engine, "0015_refinement_loop", BASE_ROWS)
    with engine.connect() as conn:
        assert "model_role" not in set(inspect(conn).get_table_names())
    assert migrate.upgrade(engine, "0017_model_roles") == "0017_model_roles"
    with Session(engine) as session:
        session.add(
            ModelRole(
                scope="generation", run="r", role="judge", model="openai/gpt-4o-mini",
                model_under_test="openai-api/gemma/gemma-3-270m",
            )
        )  # fmt: skip
        session.commit()
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []  # the table equals today's model
    migrate.downgrade(engine, "0015_refinement_loop")
    with engine.connect() as conn:
        assert "model_role" not in set(inspect(conn).get_table_names())
        assert conn.execute(text("SELECT count(*) FROM response")).scalar_one() >= 1


def test_0017_upgrades_a_populated_sqlite_database(sqlite_url: str) -> None:
    _upgrade_populated(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0017_upgrades_a_populated_postgres_database(pg_url: str) -> None:
    _upgrade_populated(make_engine(pg_url))
