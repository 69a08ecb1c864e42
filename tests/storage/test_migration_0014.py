"""Revision 0014 (a disposition response's plan position) upgrades a populated database,
keeps the id order of the rows stored before it, and downgrades with every score intact."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage import migrate
from storage.engine import make_engine
from storage.models import DispositionResponse
from storage.repo.disposition import arm_responses
from tests.storage._migration_support import BASE_ROWS, insert_at

_T = "'2026-01-01'"


def _response(rid: int, stem: str) -> str:
    return (
        "INSERT INTO disposition_response (id, arm_id, battery, stem, paraphrase, sample, "
        "probe_text, status, attempts, exhausted_attempts, reasoning_block, truncated, request, "
        f"created_at, updated_at) VALUES ({rid}, 1, 'b', '{stem}', 0, 1, 'probe', 'ok', 1, 0, "
        f"false, false, '{{}}', {_T}, {_T})"
    )


_ROWS = [
    *BASE_ROWS,
    "INSERT INTO disposition_arm (id, study, name, model, role, reasoning, samples, "
    "max_reasks, config, created_at, updated_at) VALUES (1, 's', 'a', 'sim/disp', "
    f"'reference', 'on', 1, 3, '{{}}', {_T}, {_T})",
    _response(1, "st-2"),  # stored first, planned second: read first, as before 0014
    _response(2, "st-1"),
    "INSERT INTO disposition_score (id, response_id, kind, repeat, judge_model, label, value, "
    "parse_status, created_at) VALUES (1, 1, 'category', 0, 'sim/cls', 'aligned', 1.0, 'ok', "
    f"{_T})",
]


def _upgrade_populated(engine: Engine) -> None:
    insert_at(engine, "0013_judge_settings_everywhere", _ROWS)
    assert migrate.upgrade(engine, "0014_disposition_position") == "0014_disposition_position"
    with Session(engine) as session:
        old = arm_responses([1], session=session)
        assert [(r.stem, r.position) for r in old] == [("st-2", None), ("st-1", None)]
        # rows with positions read in plan order, after the ones stored before 0014
        for rid, stem, position in ((3, "st-4", 1), (4, "st-3", 0)):
            session.add(
                DispositionResponse(
                    id=rid,
                    arm_id=1,
                    battery="b",
                    stem=stem,
                    paraphrase=0,
                    sample=1,
                    position=position,
                    probe_text="probe",
                )
            )
        session.commit()
        assert [r.stem for r in arm_responses([1], session=session)] == [
            "st-2", "st-1", "st-3", "st-4",
        ]  # fmt: skip
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []  # the tables equal today's models
    migrate.downgrade(engine, "0013_judge_settings_everywhere")
    with engine.connect() as conn:
        cols = {c["name"] for c in inspect(conn).get_columns("disposition_response")}
        assert "position" not in cols and "stem" in cols
        # no table rebuild: the scores of the responses are still there
        assert conn.execute(text("SELECT label FROM disposition_score")).scalar_one() == "aligned"
        assert conn.execute(text("SELECT count(*) FROM disposition_response")).scalar_one() == 4


def test_0014_upgrades_a_populated_sqlite_database(sqlite_url: str) -> None:
    _upgrade_populated(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0014_upgrades_a_populated_postgres_database(pg_url: str) -> None:
    _upgrade_populated(make_engine(pg_url))
