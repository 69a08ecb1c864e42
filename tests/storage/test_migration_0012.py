"""Revision 0012 (judge settings with each verdict) upgrades a populated database."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage import migrate
from storage.engine import make_engine
from storage.models import JudgeScore
from tests.storage._migration_support import BASE_ROWS, insert_at

_ROWS = [
    *BASE_ROWS,
    "INSERT INTO judge_score (id, response_id, judge_model, kind, value, raw_output, "
    "parse_status, created_at) VALUES (1, 1, 'sim/judge-strict', 'conflict_d3', 3.0, 'raw', "
    "'ok', '2026-01-01')",
]


def _upgrade_populated(engine: Engine) -> None:
    insert_at(engine, "0011_jobs", _ROWS)
    assert migrate.upgrade(engine, "0012_judge_settings") == "0012_judge_settings"
    with Session(engine) as session:
        row = session.get(JudgeScore, 1)
        assert row is not None and row.value == 3.0 and row.raw_output == "raw"
        assert row.settings is None  # verdicts from before: settings unknown
        row.settings = {"model": "sim/judge-strict", "temperature": 0.0, "seed": 0}
        session.add(row)
        session.commit()
    with Session(engine) as session:
        again = session.get(JudgeScore, 1)
        assert again is not None and again.settings == {
            "model": "sim/judge-strict", "temperature": 0.0, "seed": 0,
        }  # fmt: skip
    migrate.downgrade(engine, "0011_jobs")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM judge_score")).scalar_one() == 3.0


def test_0012_upgrades_a_populated_sqlite_database(sqlite_url: str) -> None:
    _upgrade_populated(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0012_upgrades_a_populated_postgres_database(pg_url: str) -> None:
    _upgrade_populated(make_engine(pg_url))
