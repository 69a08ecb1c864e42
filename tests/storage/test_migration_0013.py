"""Revision 0013 (judge settings of the classifier, step labeler, claim writer) upgrades a
populated database and downgrades with every verdict intact."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage import migrate
from storage.engine import make_engine
from storage.models import DispositionScore, SourceClaim, StepLabel
from tests.storage._migration_support import BASE_ROWS, insert_at

_T = "'2026-01-01'"
_ROWS = [
    *BASE_ROWS,
    "INSERT INTO ontology_version (id, name, version, content, content_hash, created_at) "
    f"VALUES (1, 'o', 1, '{{}}', 'h', {_T})",
    "INSERT INTO labeler_spec (id, key, kind, prompt_version, params, created_at) "
    f"VALUES (1, 'k', 'llm', 'p1', '{{}}', {_T})",
    "INSERT INTO step_label (id, response_id, step_index, labeler_id, ontology_version_id, "
    "repeat, category, symbol, parse_status, created_at) VALUES (1, 1, 0, 1, 1, 0, 'plan', "
    f"'3', 'ok', {_T})",
    "INSERT INTO disposition_arm (id, study, name, model, role, reasoning, samples, "
    "max_reasks, config, created_at, updated_at) VALUES (1, 's', 'a', 'sim/disp', "
    f"'reference', 'on', 1, 3, '{{}}', {_T}, {_T})",
    "INSERT INTO disposition_response (id, arm_id, battery, stem, paraphrase, sample, "
    "probe_text, status, attempts, exhausted_attempts, reasoning_block, truncated, request, "
    f"created_at, updated_at) VALUES (1, 1, 'b', 'st', 0, 0, 'probe', 'ok', 1, 0, false, "
    f"false, '{{}}', {_T}, {_T})",
    "INSERT INTO disposition_score (id, response_id, kind, repeat, judge_model, label, value, "
    "parse_status, created_at) VALUES (1, 1, 'category', 0, 'sim/cls', 'aligned', 1.0, 'ok', "
    f"{_T})",
    "INSERT INTO source_claim (id, claim_set, item_id, claim, origin, created_at, updated_at) "
    f"VALUES (1, 'c', 'i-1', 'most say [answer]', 'generated', {_T}, {_T})",
]
_SETTINGS = {"model": "sim/cls", "prompt_hash": "ab", "temperature": 0.0, "seed": 0}


def _rows_with_settings(
    session: Session,
) -> list[DispositionScore | StepLabel | SourceClaim | None]:
    """The one row of each table that 0013 gives a ``settings`` column."""
    return [
        session.get(DispositionScore, 1),
        session.get(StepLabel, 1),
        session.get(SourceClaim, 1),
    ]


def _upgrade_populated(engine: Engine) -> None:
    insert_at(engine, "0012_judge_settings", _ROWS)
    assert migrate.upgrade(engine, "0013_judge_settings_everywhere") == (
        "0013_judge_settings_everywhere"
    )
    with Session(engine) as session:
        for row in _rows_with_settings(session):
            assert row is not None and row.settings is None  # stored before: unknown
            row.settings = dict(_SETTINGS)
            session.add(row)
        session.commit()
    with Session(engine) as session:
        for row in _rows_with_settings(session):
            assert row is not None and row.settings == _SETTINGS
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []  # the tables equal today's models
    migrate.downgrade(engine, "0012_judge_settings")
    with engine.connect() as conn:
        for table in ("disposition_score", "step_label", "source_claim"):
            cols = {c["name"] for c in inspect(conn).get_columns(table)}
            assert "settings" not in cols and "id" in cols
        assert conn.execute(text("SELECT label FROM disposition_score")).scalar_one() == "aligned"
        assert conn.execute(text("SELECT symbol FROM step_label")).scalar_one() == "3"
        assert conn.execute(text("SELECT claim FROM source_claim")).scalar_one() == (
            "most say [answer]"
        )


def test_0013_upgrades_a_populated_sqlite_database(sqlite_url: str) -> None:
    _upgrade_populated(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0013_upgrades_a_populated_postgres_database(pg_url: str) -> None:
    _upgrade_populated(make_engine(pg_url))
