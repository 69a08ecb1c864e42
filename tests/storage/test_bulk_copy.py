"""PostgreSQL bulk writes through COPY store exactly what the executemany path stores.

``storage.repo._upsert.COPY_MIN_ROWS`` picks the path; each test writes the same data both
ways and compares every column read back (ids aside), conflicts included. The pipeline
test generates and labels two runs with the same seed, one per path.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from llm.specs import ModelSpec
from storage import migrate
from storage.engine import make_engine
from storage.models import LLMCacheEntry, Response, StepLabel
from storage.repo import _upsert
from storage.repo._upsert import upsert
from study.questions import read_questions, sample_questions_path, store_questions
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.trajectories import label_run

COPY, EXECUTEMANY = 0, 10**9


@pytest.fixture
def pg_engine(pg_url: str) -> Iterator[Engine]:
    engine = make_engine(pg_url)
    migrate.upgrade(engine)
    yield engine
    _upsert.COPY_MIN_ROWS = 200


def _entries(prefix: str, n: int, *, text_of: str = "") -> list[dict[str, Any]]:
    t0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    return [
        {
            "key": f"{prefix}{i:04d}",
            "provider": "sim",
            "endpoint": None if i % 3 == 0 else "http://127.0.0.1:1/v1",
            "model": "m\tx" if i % 5 == 0 else "m",
            "prompt_id": None if i % 2 else i,
            "params_id": i,
            "request": {"sampling": {"seed": i}, "notes": ["a", 'quote "b"', "back\\slash"]},
            "response": {
                "text": f"{text_of}<answer>ü {i}\nline</answer>",
                "latency_ms": i / 7,
                "flags": [],
                "none": None,
            },
            "created_at": t0 + timedelta(microseconds=i),
            "hits": i % 4,
        }
        for i in range(n)
    ]


def _read(session: Session, prefix: str) -> list[tuple[Any, ...]]:
    rows = session.exec(
        select(LLMCacheEntry)
        .where(col(LLMCacheEntry.key).startswith(prefix))
        .order_by(col(LLMCacheEntry.key))
    ).all()
    return [
        (
            e.key[len(prefix) :],
            e.provider,
            e.endpoint,
            e.model,
            e.prompt_id,
            e.params_id,
            e.request,
            e.response,
            e.created_at,
            e.hits,
        )
        for e in rows
    ]


def test_copy_and_executemany_store_the_same_rows_and_resolve_conflicts_alike(
    pg_engine: Engine,
) -> None:
    with Session(pg_engine) as session:
        for prefix, path in (("c", COPY), ("e", EXECUTEMANY)):
            _upsert.COPY_MIN_ROWS = path
            upsert(session, LLMCacheEntry, _entries(prefix, 600), key=("key",))
            # A second batch overlapping the first: DO NOTHING keeps the stored rows...
            upsert(session, LLMCacheEntry, _entries(prefix, 700, text_of="new "), key=("key",))
            # ...and DO UPDATE replaces the named columns.
            upsert(
                session,
                LLMCacheEntry,
                _entries(prefix, 300, text_of="upd ")[::2],
                key=("key",),
                update=("response",),
            )
            session.commit()
        copied, executed = _read(session, "c"), _read(session, "e")
    assert len(copied) == 700
    assert copied == executed
    by_key = {row[0]: row for row in copied}
    assert by_key["0002"][7]["text"].startswith("upd ")
    assert by_key["0001"][7]["text"].startswith("<answer>")
    assert by_key["0650"][7]["text"].startswith("new ")
    assert by_key["0003"][2] is None and by_key["0005"][3] == "m\tx"


def test_generation_and_labels_through_copy_equal_executemany(
    pg_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    copies: list[str] = []
    real_copy = _upsert._copy_into

    def counting_copy(session: Session, table: Any, rows: Any, **kw: Any) -> None:
        copies.append(str(table.name))
        real_copy(session, table, rows, **kw)

    monkeypatch.setattr(_upsert, "_copy_into", counting_copy)
    with Session(pg_engine, expire_on_commit=False) as session:
        store_questions(read_questions(sample_questions_path())[:3], session=session, source="t")
        for run, path in (("via-copy", COPY), ("via-executemany", EXECUTEMANY)):
            _upsert.COPY_MIN_ROWS = path
            # The same seed: the same requests and answers (the second run from the cache).
            run_generation(
                GenerationOptions(
                    model=ModelSpec.parse("sim/default"), run=run, perturbations="filler", seed=5
                ),
                session=session,
            )
            label_run(run, "keywords", session=session)
            session.commit()
            # Every bulk table went through COPY on the first run, none on the second.
            if path == COPY:
                assert {"response", "llm_cache_entry", "step_label"} <= set(copies)
                copies.clear()
            else:
                assert copies == []

        def responses(run_id: int) -> list[tuple[Any, ...]]:
            rows = session.exec(
                select(Response).where(col(Response.run_id) == run_id).order_by(col(Response.id))
            ).all()
            skip = {"id", "run_id", "created_at", "updated_at", "attempts", "latency_ms"}
            return [tuple(v for k, v in r.model_dump().items() if k not in skip) for r in rows]

        def labels(run_id: int) -> list[tuple[Any, ...]]:
            rows = session.execute(
                text(
                    "SELECT r.question_id, r.condition, r.sample, l.step_index, l.category,"
                    " l.symbol, l.parse_status FROM step_label l JOIN response r"
                    " ON r.id = l.response_id WHERE r.run_id = :r ORDER BY l.id"
                ),
                {"r": run_id},
            ).all()
            return [tuple(row) for row in rows]

        assert responses(1) == responses(2) and len(responses(1)) == 3 * 4 * 2
        assert labels(1) == labels(2) and len(labels(1)) > 50
        assert session.exec(select(StepLabel)).first() is not None
