"""Revision 0015 (the refinement loop's tables) upgrades a populated database from 0014,
matches today's models, and downgrades with the existing rows intact."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage import migrate
from storage.engine import make_engine
from storage.models import OntologyVersion
from storage.refinement_models import RefinementLoop
from tests.storage._migration_support import BASE_ROWS, insert_at

TABLES = {"refinement_loop", "refinement_round", "refinement_decision"}


def _upgrade_populated(engine: Engine) -> None:
    insert_at(engine, "0014_disposition_position", BASE_ROWS)
    with engine.connect() as conn:
        assert not TABLES & set(inspect(conn).get_table_names())
    assert migrate.upgrade(engine, "0015_refinement_loop") == "0015_refinement_loop"
    with Session(engine) as session:
        version = OntologyVersion(name="original", content={}, content_hash="x")
        session.add(version)
        session.commit()
        assert version.id is not None
        session.add(
            RefinementLoop(
                key="k", config={"run": "r"}, start_version_id=version.id,
                current_version_id=version.id,
            )
        )  # fmt: skip
        session.commit()
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []  # the tables equal today's models
    migrate.downgrade(engine, "0014_disposition_position")
    with engine.connect() as conn:
        assert not TABLES & set(inspect(conn).get_table_names())
        assert conn.execute(text("SELECT count(*) FROM response")).scalar_one() >= 1


def test_0015_upgrades_a_populated_sqlite_database(sqlite_url: str) -> None:
    _upgrade_populated(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0015_upgrades_a_populated_postgres_database(pg_url: str) -> None:
    _upgrade_populated(make_engine(pg_url))
