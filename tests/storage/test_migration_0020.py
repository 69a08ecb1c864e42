"""Revision 0020 (the generic instrument store) upgrades a populated database from 0017,
matches today's models, keeps a record's key unique, and downgrades with the existing rows
intact."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from storage import migrate
from storage.engine import make_engine
from storage.instrument_models import InstrumentRecord, InstrumentRun
from tests.storage._migration_support import BASE_ROWS, insert_at

TABLES = {"instrument_run", "instrument_record"}


def _upgrade_populated(engine: Engine) -> None:
    insert_at(engine, "0017_model_roles", BASE_ROWS)
    with engine.connect() as conn:
        assert not TABLES & set(inspect(conn).get_table_names())
    assert migrate.upgrade(engine, "0020_instrument_records") == "0020_instrument_records"
    with Session(engine) as session:
        run = InstrumentRun(instrument="any", name="r", model="sim/x")
        session.add(run)
        session.commit()
        assert run.id is not None
        session.add(InstrumentRecord(run_id=run.id, item="i", unit="0", value=1.0))
        session.commit()
        session.add(InstrumentRecord(run_id=run.id, item="i", unit="0", value=0.0))
        with pytest.raises(IntegrityError):
            session.commit()
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []  # the tables equal today's models
    migrate.downgrade(engine, "0017_model_roles")
    with engine.connect() as conn:
        assert not TABLES & set(inspect(conn).get_table_names())
        assert conn.execute(text("SELECT count(*) FROM response")).scalar_one() >= 1


def test_0020_upgrades_a_populated_sqlite_database(sqlite_url: str) -> None:
    _upgrade_populated(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0020_upgrades_a_populated_postgres_database(pg_url: str) -> None:
    _upgrade_populated(make_engine(pg_url))
