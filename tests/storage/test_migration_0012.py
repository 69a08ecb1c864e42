"""Revision 0012 (judge settings with each verdict) upgrades a populated database."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage import migrate
from storage.engine import make_engine
from storage.models import JudgeScore

_ROWS = [
    "INSERT INTO question (id, external_id, text, domains, created_at, updated_at) "
    "VALUES (1, 'q-1', 'Rent or buy?', '[]', '2026-01-01', '2026-01-01')",
    "INSERT INTO model_spec (id, spec, provider, model, simulated, params, created_at) "
    "VALUES (1, 'sim/default', 'sim', 'default', false, '{}', '2026-01-01')",
    "INSERT INTO generation_run (id, name, model_spec_id, prompt_version, sampling, config, "
    "simulated, status, created_at, updated_at) VALUES (1, 'r', 1, 'v1', '{}', '{}', false, "
    "'done', '2026-01-01', '2026-01-01')",
    "INSERT INTO response (id, run_id, question_id, condition, condition_class, sample, "
    "request, steps, parse_status, attempts, text, created_at, updated_at) VALUES (1, 1, 1, "
    "'baseline', 'none', 0, '{}', '[\"a\"]', 'ok', 1, 'kept', '2026-01-01', '2026-01-01')",
    "INSERT INTO judge_score (id, response_id, judge_model, kind, value, raw_output, "
    "parse_status, created_at) VALUES (1, 1, 'sim/judge-strict', 'conflict_d3', 3.0, 'raw', "
    "'ok', '2026-01-01')",
]


def _upgrade_populated(engine: Engine) -> None:
    assert migrate.upgrade(engine, "0011_jobs") == "0011_jobs"
    with engine.begin() as conn:
        for sql in _ROWS:
            conn.execute(text(sql))
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
