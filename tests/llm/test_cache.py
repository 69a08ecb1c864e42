"""The request cache and the batch runner over real HTTP and a real SQLite file."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from llm.batch import run_chat_batch
from llm.cache import CacheScope, cache_key, request_payload
from llm.openai_backend import OpenAIBackend
from llm.retry import RetryPolicy
from llm.specs import ModelSpec
from llm.types import ChatMessage, ChatRequest, SamplingParams
from storage.models import LLMCacheEntry
from tests.llm.chaos_server import ChaosServer

SECRET = "sk-cache-test-secret-987"


def backend(server: ChaosServer) -> OpenAIBackend:
    return OpenAIBackend(
        "openai-api/chaos/chaos-model",
        base_url=server.url,
        api_key=server.api_key,
        model="chaos-model",
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01),
        rng=random.Random(0),
    )


def req(text: str, k: int = 0, seed: int | None = None) -> ChatRequest:
    return ChatRequest((ChatMessage("user", text),), SamplingParams(seed=seed), sample_index=k)


@pytest.fixture
def secret_server() -> Iterator[ChaosServer]:
    server = ChaosServer(api_key=SECRET)
    with server:
        yield server


def test_second_run_makes_no_requests(chaos: ChaosServer, session: Session) -> None:
    reqs = [req(f"ok cache {i}") for i in range(20)]
    first = run_chat_batch(backend(chaos), reqs, session=session, concurrency=8)
    assert chaos.stats.requests == 20 and not any(r.cached for r in first)
    seen: list[int] = []
    progress: list[tuple[int, int]] = []
    second = run_chat_batch(
        backend(chaos),
        reqs,
        session=session,
        on_result=lambda i, r, res: seen.append(i),
        progress=lambda d, t: progress.append((d, t)),
    )
    assert chaos.stats.requests == 20  # nothing new reached the server
    assert all(r.cached and r.attempts == 0 for r in second)
    assert [r.text for r in second] == [r.text for r in first]
    assert [r.cache_key for r in second] == [r.cache_key for r in first]
    assert sorted(seen) == list(range(20)) and progress == [(20, 20)]
    hits = session.exec(select(LLMCacheEntry.hits)).all()
    assert len(hits) == 20 and set(hits) == {1}


def test_identical_requests_in_one_batch_are_sent_once(
    chaos: ChaosServer, session: Session
) -> None:
    results = run_chat_batch(backend(chaos), [req("ok dup")] * 5, session=session)
    assert chaos.stats.requests == 1 and len(results) == 5
    assert len({r.cache_key for r in results}) == 1


def test_sample_index_seed_and_params_change_the_key() -> None:
    scope = CacheScope("openai-api", "http://127.0.0.1:1/v1", "m")
    base = cache_key(scope, req("q"))
    assert base != cache_key(scope, req("q", k=1))
    assert base != cache_key(scope, req("q", seed=1))
    assert base != cache_key(CacheScope("openai-api", "http://127.0.0.1:2/v1", "m"), req("q"))
    assert base != cache_key(CacheScope("openai-api", "http://127.0.0.1:1/v1", "n"), req("q"))
    assert base == cache_key(scope, req("q"))
    assert len(base) == 64 and int(base, 16) >= 0


def test_errors_are_never_cached(chaos: ChaosServer, session: Session) -> None:
    [bad, good] = run_chat_batch(backend(chaos), [req("500x99"), req("ok e")], session=session)
    assert bad.error and good.error is None
    keys = set(session.exec(select(LLMCacheEntry.key)).all())
    assert keys == {good.cache_key}
    chaos.reset()
    run_chat_batch(backend(chaos), [req("500x99"), req("ok e")], session=session)
    assert chaos.stats.by_message == {"500x99": 2}  # the error is retried, the success is not


def test_api_key_never_reaches_the_cache(
    secret_server: ChaosServer, session: Session, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAOS_BASE_URL", secret_server.url)
    monkeypatch.setenv("CHAOS_API_KEY", SECRET)
    results = run_chat_batch(
        ModelSpec.parse("openai-api/chaos/chaos-model"),
        [req("ok k1"), req("ok k2", 1)],
        session=session,
    )
    assert all(r.error is None for r in results)
    assert secret_server.stats.auth_headers == [f"Bearer {SECRET}"] * 2
    session.close()
    raw = db_path.read_bytes()
    for extra in (db_path.with_name(db_path.name + "-wal"),):
        if extra.exists():
            raw += extra.read_bytes()
    assert SECRET.encode() not in raw
    with sqlite3.connect(db_path) as con:
        dump = "\n".join(con.iterdump())
    assert SECRET not in dump and "chaos-model" in dump
    row = request_payload(CacheScope("openai-api", secret_server.url, "chaos-model"), req("x"))
    assert SECRET not in str(row)


def test_cache_survives_a_new_session(chaos: ChaosServer, db_path: Path, session: Session) -> None:
    run_chat_batch(backend(chaos), [req("ok s")], session=session)
    session.close()
    from sqlmodel import create_engine

    engine = create_engine(f"sqlite:///{db_path}")
    with Session(engine) as fresh:
        [again] = run_chat_batch(backend(chaos), [req("ok s")], session=fresh)
    engine.dispose()
    assert again.cached and chaos.stats.requests == 1


def test_sim_backend_results_are_cached(session: Session) -> None:
    reqs = [req(f"I am a teacher.\n\nQuestion {i}?", seed=2) for i in range(10)]
    first = run_chat_batch(ModelSpec.parse("sim/default"), reqs, session=session)
    second = run_chat_batch(ModelSpec.parse("sim/default"), reqs, session=session)
    assert all(r.cached and r.simulated for r in second)
    assert [r.text for r in first] == [r.text for r in second]
    entry = session.exec(select(LLMCacheEntry)).first()
    assert entry is not None and entry.provider == "sim" and entry.model == "default"


def test_an_interrupted_run_keeps_what_arrived(chaos: ChaosServer, session: Session) -> None:
    reqs = [req(f"ok interrupt {i}") for i in range(30)]
    arrived: list[int] = []

    def stop_after_ten(i: int, _r: ChatRequest, _res: object) -> None:
        arrived.append(i)
        if len(arrived) == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_chat_batch(
            backend(chaos), reqs, session=session, concurrency=2, on_result=stop_after_ten
        )
    stored = len(session.exec(select(LLMCacheEntry.key)).all())
    assert stored >= 10  # committed despite the interruption
    assert chaos.stats.requests < 30  # the rest were cancelled, not sent
    chaos.reset()
    again = run_chat_batch(backend(chaos), reqs, session=session, concurrency=2)
    assert sum(r.cached for r in again) == stored
    assert chaos.stats.requests == 30 - stored  # the rerun resumes where it stopped
