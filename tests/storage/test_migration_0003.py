"""Revision 0003 (response logprobs, work leases) upgrades a populated database."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage import migrate
from storage.engine import make_engine
from storage.models import Response, WorkLease
from tests.storage._migration_support import BASE_ROWS, insert_at


def _upgrade_populated(engine: Engine) -> None:
    insert_at(engine, "0002_conflict_bank", BASE_ROWS)
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []
    with Session(engine) as session:
        row = session.get(Response, 1)
        assert row is not None and row.text == "kept" and row.steps == ["a"]
        assert row.logprobs is None
        row.logprobs = [{"token": "B", "logprob": -0.1, "top": [["B", -0.1], ["C", None]]}]
        session.add(row)
        session.add(WorkLease(key="generation_run:1", host="h", pid=1, token="t"))
        session.commit()
    with Session(engine) as session:
        again = session.get(Response, 1)
        assert again is not None and again.logprobs is not None
        assert again.logprobs[0]["top"][1] == ["C", None]
    # And back down to the previous head, the populated row intact.
    migrate.downgrade(engine, "0002_conflict_bank")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT text FROM response")).scalar_one() == "kept"


def test_0003_upgrades_a_populated_sqlite_database(sqlite_url: str) -> None:
    _upgrade_populated(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0003_upgrades_a_populated_postgres_database(pg_url: str) -> None:
    _upgrade_populated(make_engine(pg_url))
