"""Run a batch of chat requests: cache hits first, misses concurrently, results cached.

``run_chat_batch`` is what ``study/`` calls for generation and labeling. It never sends a
request whose answer is cached, writes each success to the cache as it arrives (commits
in small batches, so killing a run loses little), never caches errors, and turns a batch
that an endpoint refused outright (bad key, unknown model, bad URL) into one
:class:`~storage.errors.ServiceError` instead of N copies of the same message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from llm.backends import get_backend
from llm.retry import FATAL_KINDS
from llm.sanitize import sanitize_result
from llm.specs import parse_spec
from llm.types import ChatBackend, ChatRequest, ChatResult, ResultCallback
from storage.errors import ServiceError

ProgressCallback = Callable[[int, int], None]
#: Seconds between the batch's timed flushes (``on_tick`` and the cache's due commit).
TICK_S = 0.5

__all__ = ["ProgressCallback", "arun_chat_batch", "get_backend", "run_chat_batch"]


def run_chat_batch(
    backend_or_spec: ChatBackend | str,
    requests: Sequence[ChatRequest],
    *,
    session: Any = None,
    concurrency: int = 16,
    progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
    on_tick: Callable[[], None] | None = None,
    cache_text_in_responses: bool = False,
) -> list[ChatResult]:
    """Answer every request, serving cached answers without sending anything.

    Synchronous wrapper around :func:`arun_chat_batch` (``asyncio.run``); from code that
    already runs an event loop, await :func:`arun_chat_batch` instead.

    Args:
        backend_or_spec: A backend or a ``provider/model`` spec.
        requests: The requests.
        session: A database session for the cache (``None``: no cache).
        concurrency: Maximum requests in flight.
        progress: ``progress(done, total)`` after the cache lookup and after each result.
        on_result: ``on_result(index, request, result)`` for every request (cache hits
            included), in the calling thread, as results arrive.
        on_tick: called every :data:`TICK_S` seconds while requests are in flight, in the
            same thread, so a caller that writes in batches can commit what it holds
            even when no further result arrives (a slow or stalled endpoint).
        cache_text_in_responses: The caller stores every successful answer's text in a
            ``response`` row under its ``cache_key`` (generation does): cache entries
            then point there instead of holding a second copy (see :class:`ChatCache`).

    Returns:
        One result per request, in request order.

    Raises:
        ServiceError: When every request sent failed the same way for a reason that
            applies to the whole endpoint (bad key, unknown model, bad or unreachable URL).
        ConfigError: For a malformed spec or missing environment variables.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "run_chat_batch was called inside an event loop; await arun_chat_batch instead"
        )
    return asyncio.run(
        arun_chat_batch(
            backend_or_spec,
            requests,
            session=session,
            concurrency=concurrency,
            progress=progress,
            on_result=on_result,
            on_tick=on_tick,
            cache_text_in_responses=cache_text_in_responses,
        )
    )


async def arun_chat_batch(
    backend_or_spec: ChatBackend | str,
    requests: Sequence[ChatRequest],
    *,
    session: Any = None,
    concurrency: int = 16,
    progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
    on_tick: Callable[[], None] | None = None,
    cache_text_in_responses: bool = False,
) -> list[ChatResult]:
    """Async twin of :func:`run_chat_batch` (same arguments, same behaviour)."""
    from llm.cache import CacheScope, ChatCache, cache_key, request_payload

    backend = get_backend(backend_or_spec) if isinstance(backend_or_spec, str) else backend_or_spec
    info = parse_spec(backend.spec)
    scope = CacheScope(info.provider, backend.endpoint(), info.model)
    total = len(requests)
    keys = [cache_key(scope, r) for r in requests]
    results: list[ChatResult | None] = [None] * total
    cache = (
        ChatCache(session, text_in_responses=cache_text_in_responses)
        if session is not None
        else None
    )
    done = 0

    hits = cache.lookup(keys) if cache is not None else {}
    # Identical requests in one batch are sent once and fanned out to every index.
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if key in hits:
            res = hits[key]
            results[i] = res
            done += 1
            if on_result is not None:
                on_result(i, requests[i], res)
        else:
            groups.setdefault(key, []).append(i)
    if progress is not None:
        progress(done, total)
    if not groups:
        return [r for r in results if r is not None]

    miss_keys = list(groups)
    miss_requests = [requests[groups[k][0]] for k in miss_keys]

    def collect(j: int, _req: ChatRequest, res: ChatResult) -> None:
        nonlocal done
        key = miss_keys[j]
        res = sanitize_result(replace(res, cache_key=key))
        if cache is not None and res.error is None and res.text is not None:
            cache.add(key, request_payload(scope, miss_requests[j]), res)
        for i in groups[key]:
            results[i] = res
            done += 1
            if on_result is not None:
                on_result(i, requests[i], res)
        if progress is not None:
            progress(done, total)

    def tick() -> None:
        if cache is not None:
            cache.flush_if_due()
        if on_tick is not None:
            on_tick()

    ticker = asyncio.create_task(_every(TICK_S, tick))
    try:
        sent = await backend.achat(miss_requests, concurrency=concurrency, on_result=collect)
    finally:
        ticker.cancel()
        if cache is not None:
            cache.flush()
    _raise_if_refused(sent)
    return [r for r in results if r is not None]


async def _every(seconds: float, fn: Callable[[], None]) -> None:
    while True:
        await asyncio.sleep(seconds)
        fn()


def _raise_if_refused(sent: Sequence[ChatResult]) -> None:
    if not sent or any(r.error is None for r in sent):
        return
    kinds = {r.error_kind for r in sent}
    if len(kinds) == 1 and next(iter(kinds)) in FATAL_KINDS:
        raise ServiceError(sent[0].error or "Model endpoint refused every request.")
