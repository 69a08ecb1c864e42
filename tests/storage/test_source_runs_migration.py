"""Revision 0008 (source-reliance runs and probes) upgrades a populated database.

A workspace populated through the real pipeline (simulated generation, the cache, a
judge) is taken back to 0007, upgraded again with its rows intact and the schema equal to
the models, holds a stored source run, and goes back down leaving the rest untouched.
SQLite always; PostgreSQL when ``DRIFTLENS_TEST_PG_URL`` is set.
"""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from llm.specs import ModelSpec
from storage import migrate
from storage.engine import make_engine
from study.sources.items import shipped_items
from study.sources.plan import SourcesConfig
from study.sources.sim.wiring import backend_for
from study.sources.store import load_sources_runs, run_stored_sources
from tests.storage.test_request_migration import _populate

PREVIOUS = "0007_shared_texts"
TABLES = ("question", "generation_run", "response", "prompt", "llm_cache_entry", "judge_score")


def _counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        present = set(inspect(conn).get_table_names())
        return {
            t: int(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one())
            for t in TABLES
            if t in present
        }


def _upgrade_populated(engine: Engine) -> None:
    _populate(engine)
    migrate.downgrade(engine, PREVIOUS)
    with engine.connect() as conn:
        assert "source_probe" not in inspect(conn).get_table_names()
    before = _counts(engine)
    assert before["response"] > 0 and before["prompt"] > 0
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []
    assert _counts(engine) == before
    # 16 items: 208 probes in one batch, PostgreSQL's COPY path (storage.repo._upsert)
    items = shipped_items()[:16]
    with Session(engine, expire_on_commit=False) as session:
        summary = run_stored_sources(
            "m",
            items,
            backend_for(ModelSpec.parse("sim/src-rigid"), items),
            [SourcesConfig()],
            session=session,
        )
        assert summary.answered == 208
        (run,) = load_sources_runs("m", session=session)
        assert len(run.records) == 208 and run.records[0].messages
        assert all(r.reading.probs and r.logprobs for r in run.records)
    migrate.downgrade(engine, PREVIOUS)
    after = _counts(engine)
    # the source run's prompts and cache entries stay (shared, never deleted with a run)
    kept = ("question", "generation_run", "response", "judge_score")
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
    with engine.connect() as conn:
        assert "source_run" not in inspect(conn).get_table_names()


def test_0008_upgrades_a_populated_sqlite_database(sqlite_url: str) -> None:
    _upgrade_populated(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0008_upgrades_a_populated_postgres_database(pg_url: str) -> None:
    _upgrade_populated(make_engine(pg_url))


def _claims_on_a_stored_run(engine: Engine) -> None:
    """0009 (tier-2 claims) on top of 0008 holding a stored source run."""
    from study.sources.tier2 import store_claims, stored_claims

    assert migrate.upgrade(engine, "0008_source_runs") == "0008_source_runs"
    items = shipped_items()[:2]
    with Session(engine, expire_on_commit=False) as session:
        run_stored_sources(
            "m",
            items,
            backend_for(ModelSpec.parse("sim/src-rigid"), items),
            [SourcesConfig()],
            session=session,
        )
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []
    with Session(engine, expire_on_commit=False) as session:
        (run,) = load_sources_runs("m", session=session)
        assert len(run.records) == 26
        store_claims({items[0].id: "most people settle on [answer]"}, claim_set="s",
                     session=session)  # fmt: skip
        session.commit()
        assert stored_claims("s", session=session) == {
            items[0].id: "most people settle on [answer]"
        }
    migrate.downgrade(engine, "0008_source_runs")
    with engine.connect() as conn:
        assert "source_claim" not in inspect(conn).get_table_names()
        assert conn.execute(text("SELECT count(*) FROM source_probe")).scalar_one() == 26


def test_0009_upgrades_a_database_with_a_stored_run_sqlite(sqlite_url: str) -> None:
    _claims_on_a_stored_run(make_engine(sqlite_url))


@pytest.mark.postgres
def test_0009_upgrades_a_database_with_a_stored_run_postgres(pg_url: str) -> None:
    _claims_on_a_stored_run(make_engine(pg_url))
