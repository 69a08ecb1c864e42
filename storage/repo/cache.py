"""The LLM request cache (keyed by the sha256 the ``llm`` room computes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, update
from sqlmodel import Session, col, select

from storage.models import LLMCacheEntry, Response
from storage.repo._upsert import upsert
from storage.repo.requests import RequestInterner
from storage.types import utcnow

#: The key and value that replace ``"text"`` in a stored result whose answer text lives in
#: the ``response`` row with the same ``cache_key`` (written by generation).
TEXT_IN_RESPONSE: tuple[str, str] = ("text_in", "response")
#: Keys per ``IN (…)`` lookup: below SQLite's bound-parameter limit.
_CHUNK = 500


def answer_texts(keys: Sequence[str], *, session: Session) -> dict[str, str]:
    """The answer text a response row holds for each cache key that has one."""
    out: dict[str, str] = {}
    wanted = list(dict.fromkeys(keys))
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        rows = session.execute(
            select(Response.cache_key, Response.text).where(
                col(Response.cache_key).in_(chunk), col(Response.text).is_not(None)
            )
        )
        for key, text in rows:
            out.setdefault(str(key), str(text))
    return out


def cache_response(entry: LLMCacheEntry, *, session: Session) -> dict[str, Any]:
    """The whole stored result of a cache entry, its answer text included (for exports).

    An entry whose text lives in a response row gets it back from there; if no row holds
    it any more, ``"text"`` is ``None`` (the cache treats that entry as a miss).
    """
    data = dict(entry.response or {})
    if data.pop(TEXT_IN_RESPONSE[0], None) is not None:
        data["text"] = answer_texts([entry.key], session=session).get(entry.key)
    return data


@dataclass(frozen=True)
class CacheStats:
    """Size and use of the cache."""

    entries: int
    hits: int


def cache_get(key: str, *, session: Session, count_hit: bool = True) -> LLMCacheEntry | None:
    """The cached entry for ``key``; counts a hit (atomically) when found.

    Its ``response`` may name where its text lives instead of holding it: read the whole
    result with :func:`cache_response`.
    """
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
