"""Revision 0005 converts a populated workspace in place: every export stays identical.

The workspace is populated through the real pipeline (simulated generation, cache,
judges), taken back to revision 0004 (the old layout: every request stored whole),
checked to be the old layout, and upgraded again. The exports, every stored request and
every cache entry must be the same before and after, and running the conversion again
must change nothing. SQLite always; PostgreSQL when ``DRIFTLENS_TEST_PG_URL`` is set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from llm.specs import ModelSpec
from storage import migrate
from storage.engine import make_engine
from storage.hashing import canonical_json, content_hash
from storage.models import LLMCacheEntry, Prompt, Response
from storage.repo import requests as repo_requests
from storage.repo.requests import cache_request, split_prefix, split_request, stored_request
from study.questions import read_questions, sample_questions_path, store_questions
from study.reasoning.exports import export_responses_jsonl
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.judges import judge_run
from study.reasoning.preferences import export_preferences
from tests.storage._migration_support import revision_module

REVISION = "0005_normalised_requests"
PREVIOUS = "0004_disposition"
RUNS = ("m-default", "m-strong")


def _populate(engine: Engine) -> None:
    migrate.upgrade(engine)
    with Session(engine, expire_on_commit=False) as session:
        store_questions(read_questions(sample_questions_path())[:3], session=session, source="t")
        for run, model in zip(RUNS, ("sim/default", "sim/strong"), strict=True):
            run_generation(
                GenerationOptions(
                    model=ModelSpec.parse(model),
                    run=run,
                    perturbations="filler,job_loss",
                    samples=2,
                ),
                session=session,
            )
        judge_run(RUNS[0], ModelSpec.parse("sim/default"), session=session)
        session.commit()


def _without_judge_settings(jsonl: str) -> str:
    """The preference pairs less their ``judge_settings``.

    These round trips go below revision 0012, whose downgrade drops the stored judge settings
    (the column did not exist before it), so a pair exported after the trip says ``null``
    where it said the settings before; everything else must come back exactly. That the
    settings are exported at all is tested in tests/exports.
    """
    pairs = [json.loads(line) for line in jsonl.splitlines() if line.strip()]
    assert all("judge_settings" in p for p in pairs)
    return "".join(
        json.dumps({k: v for k, v in p.items() if k != "judge_settings"}) + "\n" for p in pairs
    )


def _run_exports(session: Session, out: Path) -> dict[str, Any]:
    """Both runs' response exports, the preferences and every stored request, as text."""
    out.mkdir(parents=True, exist_ok=True)
    got: dict[str, Any] = {}
    for run in RUNS:
        export_responses_jsonl(run, out / f"{run}.jsonl", session=session)
        got[f"responses {run}"] = (out / f"{run}.jsonl").read_text(encoding="utf-8")
    export_preferences(RUNS[0], "sim/default", out / "prefs.jsonl", session=session)
    got["preferences"] = _without_judge_settings((out / "prefs.jsonl").read_text(encoding="utf-8"))
    got["requests"] = [
        canonical_json(stored_request(r, session=session))
        for r in session.exec(select(Response).order_by(col(Response.id)))
    ]
    return got


def _cache_entries(
    session: Session, rest: Callable[[LLMCacheEntry], list[Any]]
) -> tuple[Sequence[LLMCacheEntry], list[str]]:
    """Every cache entry (by key), and each as text: key, endpoint, whole request, ``rest``."""
    entries = session.exec(select(LLMCacheEntry).order_by(col(LLMCacheEntry.key))).all()
    # The key is the hash of the whole payload: the payload read back is exact.
    assert all(content_hash(cache_request(e, session=session)) == e.key for e in entries)
    rows = [
        canonical_json(
            [e.key, e.provider, e.endpoint, e.model, cache_request(e, session=session), *rest(e)]
        )
        for e in entries
    ]
    return entries, rows


def _exports(engine: Engine, out: Path) -> dict[str, Any]:
    """Every export and stored request/cache entry, as comparable text."""
    with Session(engine) as session:
        got = _run_exports(session, out)
        _, got["cache"] = _cache_entries(session, lambda e: [e.response, e.hits])
    assert got["preferences"] and all(got[f"responses {r}"] for r in RUNS)
    return got


def _legacy_rows(engine: Engine) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    with engine.connect() as conn:
        responses = [
            json.loads(r) if isinstance(r, str) else r
            for (r,) in conn.execute(text("SELECT request FROM response ORDER BY id"))
        ]
        cache = [
            (k, json.loads(r) if isinstance(r, str) else r)
            for k, r in conn.execute(text("SELECT key, request FROM llm_cache_entry"))
        ]
    return responses, cache


def test_populated_workspace_converts_in_place_with_identical_exports(
    any_url: str, tmp_path: Path
) -> None:
    engine = make_engine(any_url)
    _populate(engine)
    before = _exports(engine, tmp_path / "before")
    n_requests = len(before["requests"])

    # Revision 0004: the old layout, every request whole in its row.
    assert migrate.downgrade(engine, PREVIOUS) == PREVIOUS
    assert "prompt" not in inspect(engine).get_table_names()
    legacy_responses, legacy_cache = _legacy_rows(engine)
    assert len(legacy_responses) == n_requests
    assert all(len(r["messages"]) == 2 and "seed" in r["sampling"] for r in legacy_responses)
    assert all(content_hash(payload) == key for key, payload in legacy_cache)

    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []
    after = _exports(engine, tmp_path / "after")
    assert after == before
    with Session(engine) as session:
        rows = session.exec(select(Response)).all()
        assert all(r.prompt_id is not None and r.params_id is not None for r in rows)
        assert all(set(r.request) <= {"sampling", "parse_notes"} for r in rows)
        # One prompt per distinct message list, shared by both runs and the cache, plus
        # one per distinct shared instruction (revision 0007_shared_texts).
        lists = [r["messages"] for r in legacy_responses] + [p["messages"] for _, p in legacy_cache]
        distinct = {canonical_json(m) for m in lists} | {
            canonical_json(prefix) for prefix, _ in map(split_prefix, lists) if prefix is not None
        }
        assert len(session.exec(select(Prompt)).all()) == len(distinct)

    # Running the conversion again is a no-op, and so is upgrading again.
    module = revision_module(REVISION)
    with engine.begin() as conn:
        assert module.convert(conn) == 0
    assert migrate.upgrade(engine) == migrate.head_revision()
    assert _exports(engine, tmp_path / "again") == before


def test_frozen_split_in_the_revision_matches_the_repository() -> None:
    module = revision_module(REVISION)
    records: list[dict[str, Any]] = [
        {},
        {"m": 1},
        {"messages": "not a list", "x": 1},
        {"messages": [{"role": "user", "content": "q"}]},
        {
            "model": "sim/default",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
            "sampling": {"temperature": 0.7, "seed": 5},
            "sample_index": 1,
            "served_model": "sim/default",
            "parse_notes": ["n"],
        },
        {"sampling": {"seed": None}, "extras": {"logprobs": 5}},
        {"model": "m", "messages": [], "context": {"order": [1, 2]}, "sampling": {}},
    ]
    for record in records:
        split = split_request(record)
        assert module.split_request(record) == (split.messages, split.body, split.rest)
        assert repo_requests.join_request(split.messages, split.body, split.rest) == record
        assert module.join_request(split.messages, split.body, split.rest) == record
        # Fields an instrument reads from the row itself stay there.
        assert "context" not in (split.body or {})
