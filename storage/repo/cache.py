"""The LLM request cache (keyed by the sha256 the ``llm`` room computes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, update
from sqlmodel import Session, select

from storage.models import LLMCacheEntry
from storage.repo._upsert import upsert
from storage.repo.requests import RequestInterner
from storage.types import utcnow


@dataclass(frozen=True)
class CacheStats:
    """Size and use of the cache."""

    entries: int
    hits: int


def cache_get(key: str, *, session: Session, count_hit: bool = True) -> LLMCacheEntry | None:
    """The cached entry for ``key``; counts a hit (atomically) when found."""
    entry = session.get(LLMCacheEntry, key)
    if entry is None or not count_hit:
        return entry
    session.execute(
        update(LLMCacheEntry)
        .where(LLMCacheEntry.key == key)  # type: ignore[arg-type]
        .values(hits=LLMCacheEntry.hits + 1)
        .execution_options(synchronize_session=False)
    )
    session.refresh(entry, attribute_names=["hits"])
    return entry


def cache_put(
    key: str,
    *,
    provider: str,
    model: str,
    request: Mapping[str, Any],
    response: Mapping[str, Any],
    endpoint: str | None = None,
    overwrite: bool = False,
    session: Session,
) -> LLMCacheEntry:
    """Store a response under ``key``.

    By default the first stored response wins (a concurrent duplicate request does not
    replace it); ``overwrite=True`` replaces it (hit count kept). The request is stored
    normalised; :func:`storage.repo.requests.cache_request` returns it whole.
    """
    [(prompt_id, params_id, rest)] = RequestInterner().intern([request], session=session)
    row = {
        "key": key,
        "provider": provider,
        "endpoint": endpoint,
        "model": model,
        "prompt_id": prompt_id,
        "params_id": params_id,
        "request": rest,
        "response": dict(response),
        "created_at": utcnow(),
        "hits": 0,
    }
    upsert(
        session,
        LLMCacheEntry,
        [row],
        key=("key",),
        update=(
            "provider",
            "endpoint",
            "model",
            "prompt_id",
            "params_id",
            "request",
            "response",
            "created_at",
        )
        if overwrite
        else None,
    )
    stmt = select(LLMCacheEntry).where(LLMCacheEntry.key == key)
    return session.exec(stmt.execution_options(populate_existing=True)).one()


def cache_stats(*, session: Session) -> CacheStats:
    """How many entries the cache holds and how often they were reused."""
    entries, hits = session.exec(
        select(func.count(), func.coalesce(func.sum(LLMCacheEntry.hits), 0))
    ).one()
    return CacheStats(entries=int(entries), hits=int(hits))
