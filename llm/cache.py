"""The request cache: one row per (provider, endpoint, model, messages, params, sample index).

The key is the SHA-256 of the canonical JSON of exactly those fields, so the same request
is answered once however often it is asked. API keys never enter the payload (the
endpoint is the secret-free base URL), so neither the key nor the stored request holds one.
Errors are never cached: a failed request is retried the next time the batch runs.

An entry written for a caller that keeps the answer in a ``response`` row (generation,
``text_in_responses=True``) holds no copy of the answer text: its stored result has
``"text_in": "response"`` and the text is read from the response row with the same
``cache_key`` (indexed). If that row is gone or holds no text, the entry is a miss and the
request is sent again; never a wrong answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from llm.logprobs import logprobs_from_json, logprobs_to_json
from llm.types import ChatRequest, ChatResult
from storage.hashing import canonical_json, content_hash
from storage.models import LLMCacheEntry
from storage.repo._upsert import upsert
from storage.repo.cache import TEXT_IN_RESPONSE, answer_texts
from storage.repo.requests import RequestInterner
from storage.types import utcnow

CACHE_FORMAT = 1  # bump when the payload layout changes; old rows then simply miss

_LOOKUP_CHUNK = 500  # stays below SQLite's bound-parameter limit


@dataclass(frozen=True)
class CacheScope:
    """Where a batch's requests go: the non-request part of every cache key."""

    provider: str
    endpoint: str
    model: str


def request_payload(scope: CacheScope, request: ChatRequest) -> dict[str, Any]:
    """Return the canonical, secret-free description of one request (what gets hashed).

    The request extras (logprobs, chat-template switches, prefill continuation, stop,
    attempt) appear under ``"extras"`` only when at least one is set, so the payload, and
    therefore the key, of a request without extras is exactly what it was before they
    existed (pinned by tests/llm/test_cache_keys_pinned.py).
    """
    payload: dict[str, Any] = {
        "cache_format": CACHE_FORMAT,
        "provider": scope.provider,
        "endpoint": scope.endpoint,
        "model": scope.model,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "sampling": request.sampling.model_dump(mode="json"),
        "sample_index": request.sample_index,
    }
    extras = request.extras()
    if extras:
        payload["extras"] = extras
    return payload


def cache_key(scope: CacheScope, request: ChatRequest) -> str:
    """Return the SHA-256 hex key of a request (see :func:`request_payload`)."""
    return content_hash(request_payload(scope, request))


def result_to_json(result: ChatResult) -> dict[str, Any]:
    """Serialise the stored part of a successful result."""
    return {
        "text": result.text,
        "finish_reason": result.finish_reason,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "latency_ms": result.latency_ms,
        "model": result.model,
        "simulated": result.simulated,
        "seed": result.seed,
        "attempts": result.attempts,
        **({"output_flags": list(result.output_flags)} if result.output_flags else {}),
        **({"logprobs": logprobs_to_json(result.logprobs)} if result.logprobs is not None else {}),
    }


def result_from_json(data: dict[str, Any], key: str) -> ChatResult:
    """Rebuild a cached result (``cached=True``, ``attempts=0``: nothing was sent now)."""
    return ChatResult(
        text=data.get("text"),
        finish_reason=data.get("finish_reason"),
        prompt_tokens=data.get("prompt_tokens"),
        completion_tokens=data.get("completion_tokens"),
        latency_ms=float(data.get("latency_ms") or 0.0),
        error=None,
        cached=True,
        cache_key=key,
        attempts=0,
        model=str(data.get("model") or ""),
        simulated=bool(data.get("simulated", False)),
        seed=data.get("seed"),
        logprobs=logprobs_from_json(data.get("logprobs")),
        output_flags=tuple(str(f) for f in data.get("output_flags") or ()),
    )


class ChatCache:
    """Reads and writes :class:`~storage.models.LLMCacheEntry` rows through a session.

    Writes are committed in batches (every ``commit_every`` results or
    ``commit_interval_s`` seconds), so a killed run loses at most one batch. Payloads are
    stored normalised (messages and shared parameters once, see
    :mod:`storage.repo.requests`); the key is the hash of the whole payload as before.

    Args:
        session: The caller's session (front ends open it; we only use it).
        commit_every: Commit after this many new rows.
        commit_interval_s: Commit when this long has passed since the last commit.
        text_in_responses: Store results without their text, which the caller keeps in
            ``response`` rows under the same ``cache_key`` (see the module docstring).
    """

    def __init__(
        self,
        session: Session,
        *,
        commit_every: int = 1000,
        commit_interval_s: float = 2.0,
        text_in_responses: bool = False,
    ) -> None:
        self.session = session
        self.text_in_responses = text_in_responses
        self.commit_every = commit_every
        self.commit_interval_s = commit_interval_s
        self._rows: list[dict[str, Any]] = []
        self._last_commit = time.monotonic()
        self._interner = RequestInterner()
        self.written = 0

    def lookup(self, keys: Iterable[str], *, count_hits: bool = True) -> dict[str, ChatResult]:
        """Return the cached results of the given keys that exist.

        Args:
            keys: Cache keys.
            count_hits: Increment ``hits`` of the rows found (committed at once).
        """
        wanted = list(dict.fromkeys(keys))
        found: dict[str, ChatResult] = {}
        for start in range(0, len(wanted), _LOOKUP_CHUNK):
            chunk = wanted[start : start + _LOOKUP_CHUNK]
            rows = self.session.exec(
                select(LLMCacheEntry.key, LLMCacheEntry.response).where(
                    col(LLMCacheEntry.key).in_(chunk)
                )
            ).all()
            stored = {key: dict(response or {}) for key, response in rows}
            elsewhere = [k for k, data in stored.items() if data.get(TEXT_IN_RESPONSE[0])]
            texts = answer_texts(elsewhere, session=self.session) if elsewhere else {}
            for key, data in stored.items():
                if data.pop(TEXT_IN_RESPONSE[0], None) is not None:
                    if key not in texts:
                        continue  # the response row holding the text is gone: a miss
                    data["text"] = texts[key]
                found[key] = result_from_json(data, key)
        if count_hits and found:
            hit_keys = list(found)
            for start in range(0, len(hit_keys), _LOOKUP_CHUNK):
                self.session.execute(
                    update(LLMCacheEntry)
                    .where(col(LLMCacheEntry.key).in_(hit_keys[start : start + _LOOKUP_CHUNK]))
                    .values(hits=col(LLMCacheEntry.hits) + 1)
                )
            self.session.commit()
        return found

    def add(self, key: str, payload: dict[str, Any], result: ChatResult) -> None:
        """Stage a successful result; commits when a small batch is due.

        Raises:
            ValueError: When ``result`` is an error (errors are never cached).
        """
        if result.error is not None or result.text is None:
            raise ValueError("errors are never cached")
        self._rows.append(
            {
                "key": key,
                "provider": str(payload["provider"]),
                "endpoint": str(payload["endpoint"]),
                "model": str(payload["model"]),
                "request": payload,
                "response": self._stored_result(result),
                "created_at": utcnow(),
                "hits": 0,
            }
        )
        self.written += 1
        due = time.monotonic() - self._last_commit >= self.commit_interval_s
        if len(self._rows) >= self.commit_every or due:
            self.flush()

    def _stored_result(self, result: ChatResult) -> dict[str, Any]:
        data = result_to_json(result)
        if self.text_in_responses:
            del data["text"]
            data[TEXT_IN_RESPONSE[0]] = TEXT_IN_RESPONSE[1]
        return data

    def flush_if_due(self) -> None:
        """Flush when rows are staged and the commit interval has passed."""
        if self._rows and time.monotonic() - self._last_commit >= self.commit_interval_s:
            self.flush()

    def flush(self) -> None:
        """Insert and commit staged rows (a key stored meanwhile by another run is kept)."""
        if self._rows:
            rows, self._rows = self._rows, []
            ids = self._interner.intern([row["request"] for row in rows], session=self.session)
            for row, (prompt_id, params_id, rest) in zip(rows, ids, strict=True):
                row["prompt_id"], row["params_id"], row["request"] = prompt_id, params_id, rest
            # INSERT ... ON CONFLICT DO NOTHING per batch (COPY first on PostgreSQL): a
            # per-row merge() costs a SELECT each and held the event loop for milliseconds.
            upsert(self.session, LLMCacheEntry, rows, key=("key",))
            self.session.commit()
        self._last_commit = time.monotonic()


def payload_text(payload: dict[str, Any]) -> str:
    """Canonical JSON of a payload (for debugging and exports; secret-free by construction)."""
    return canonical_json(payload)
