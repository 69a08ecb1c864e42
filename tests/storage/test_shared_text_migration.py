"""Revision 0007 stores the instruction once and drops the cache's copies of answer texts.

A workspace populated through the real pipeline (simulated generation, the cache, a
judge) is taken back to revision 0006 (every prompt whole, every cache entry with its
text), checked to be that layout, and upgraded again: exports, every stored request and
every cache entry (read whole) are identical before and after, every entry is still a
cache hit, and running the conversion again changes nothing. SQLite always; PostgreSQL
when ``DRIFTLENS_TEST_PG_URL`` is set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from llm.backends import get_backend
from llm.cache import ChatCache
from llm.specs import ModelSpec
from storage import migrate
from storage.engine import make_engine
from storage.models import Prompt, Response
from storage.repo.cache import cache_response
from storage.repo.requests import split_prefix
from study.questions import read_questions, sample_questions_path, store_questions
from study.reasoning.generation import GenerationOptions, run_generation
from tests.counting_backend import CountingBackend
from tests.storage._migration_support import revision_module

# The same populated workspace as the 0005 conversion test (runs, cache, judge scores).
from tests.storage.test_request_migration import (
    RUNS,
    _cache_entries,
    _populate,
    _run_exports,
)

REVISION = "0007_shared_texts"
PREVIOUS = "0006_ontology_loop"


def _exports(engine: Engine, out: Path) -> dict[str, Any]:
    """Every export, stored request and whole cache entry, as comparable text."""
    with Session(engine) as session:
        got = _run_exports(session, out)
        entries, got["cache"] = _cache_entries(
            session, lambda e: [cache_response(e, session=session)]
        )
        assert all(isinstance(cache_response(e, session=session)["text"], str) for e in entries)
        # Every entry is a hit with its whole answer (a rerun sends nothing).
        found = ChatCache(session).lookup([e.key for e in entries], count_hits=False)
        assert sorted(found) == [e.key for e in entries]
        assert all(found[e.key].text == cache_response(e, session=session)["text"] for e in entries)
    assert got["preferences"] and all(got[f"responses {r}"] for r in RUNS)
    return got


def _raw_cache(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return [
            json.loads(r) if isinstance(r, str) else r
            for (r,) in conn.execute(text("SELECT response FROM llm_cache_entry"))
        ]


def test_populated_workspace_converts_in_place_with_identical_exports(
    any_url: str, tmp_path: Path
) -> None:
    engine = make_engine(any_url)
    _populate(engine)
    before = _exports(engine, tmp_path / "before")
    # Written at head: generation's entries point at the response rows, the judge's hold
    # their own text (no response row holds a judge's answer).
    raw = _raw_cache(engine)
    assert any(r.get("text_in") == "response" and "text" not in r for r in raw)
    assert any("text" in r and "text_in" not in r for r in raw)

    # Revision 0006: prompts whole, every cache entry with its own text.
    assert migrate.downgrade(engine, PREVIOUS) == PREVIOUS
    assert "prefix_id" not in {c["name"] for c in inspect(engine).get_columns("prompt")}
    assert all(isinstance(r.get("text"), str) and "text_in" not in r for r in _raw_cache(engine))
    with engine.connect() as conn:
        lists = [
            json.loads(m) if isinstance(m, str) else m
            for (m,) in conn.execute(text("SELECT messages FROM prompt"))
        ]
    assert any(len(m) == 2 and m[0]["role"] == "system" for m in lists)

    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []
    assert _exports(engine, tmp_path / "after") == before
    with Session(engine) as session:
        prompts = session.exec(select(Prompt)).all()
        shared = [p for p in prompts if p.prefix_id is not None]
        assert shared and all(p.messages[0]["role"] != "system" for p in shared)
        # The instruction is stored once: one prefix row for every generation prompt.
        assert len({p.prefix_id for p in shared}) < len(shared) / 10
        assert all(split_prefix(p.messages)[0] is None for p in prompts)

    module = revision_module(REVISION)
    with engine.begin() as conn:
        assert module.convert(conn) == 0
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert _exports(engine, tmp_path / "again") == before


def test_generation_rerun_sends_nothing_and_a_lost_text_is_a_miss(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrate.upgrade(engine)
    with Session(engine, expire_on_commit=False) as session:
        store_questions(read_questions(sample_questions_path())[:2], session=session, source="t")
        first = CountingBackend(get_backend(ModelSpec.parse("sim/default")))
        options = GenerationOptions(
            model=ModelSpec.parse("sim/default"), run="a", perturbations="filler", seed=3
        )
        run_generation(options, session=session, backend=first)
        assert first.sent > 0
        # Another run with the same seed asks exactly the same requests: all cached.
        again = CountingBackend(get_backend(ModelSpec.parse("sim/default")))
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run="b", perturbations="filler", seed=3
            ),
            session=session,
            backend=again,
        )
        assert again.sent == 0
        texts = {
            (r.question_id, r.condition, r.sample): r.text
            for r in session.exec(select(Response).where(col(Response.run_id) == 2))
        }
        originals = {
            (r.question_id, r.condition, r.sample): r.text
            for r in session.exec(select(Response).where(col(Response.run_id) == 1))
        }
        assert texts == originals and all(texts.values())
        # No response row holds an entry's text any more: that entry is a miss, never a
        # wrong or empty answer.
        key = session.exec(select(Response.cache_key)).first()
        assert key is not None
        session.execute(text("UPDATE response SET text = NULL WHERE cache_key = :k"), {"k": key})
        assert key not in ChatCache(session).lookup([key], count_hits=False)
