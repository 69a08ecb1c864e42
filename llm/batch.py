"""Run a batch of chat requests: cache hits first, misses concurrently, results cached.

``run_chat_batch`` is what ``study/`` calls for generation and labeling;
``run_chat_chains`` is its twin for requests that may need a follow-up (an LLM labeler's
repair request), sent as soon as the reply it depends on is in. It never sends a
request whose answer is cached, writes each success to the cache as it arrives (commits
in small batches, so killing a run loses little), never caches errors, and turns a batch
that an endpoint refused outright (bad key, unknown model, bad URL) into one
:class:`~storage.errors.ServiceError` instead of N copies of the same message.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from llm.backends import get_backend
from llm.limits import STALL_BUDGET_ENV, stall_budget_s
from llm.retry import FATAL_KINDS
from llm.sanitize import sanitize_result
from llm.specs import ModelSpec, parse_spec
from llm.stall import StallClock, stall_clock
from llm.types import ChatBackend, ChatRequest, ChatResult, ResultCallback
from storage.errors import ServiceError

if TYPE_CHECKING:
    from llm.cache import CacheScope, ChatCache

ProgressCallback = Callable[[int, int], None]
P = ParamSpec("P")
R = TypeVar("R")
#: Seconds between the batch's timed flushes (``on_tick`` and the cache's due commit).
TICK_S = 0.5

#: ``follow_up(chain, request, result)``: the chain's next request, or ``None`` when it ends.
FollowUp = Callable[[int, ChatRequest, ChatResult], "ChatRequest | None"]

__all__ = [
    "FollowUp",
    "ProgressCallback",
    "arun_chat_batch",
    "arun_chat_chains",
    "get_backend",
    "run_chat_batch",
    "run_chat_chains",
]


async def arun_chat_batch(
    backend_or_spec: ChatBackend | ModelSpec,
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

    :func:`run_chat_batch` is its synchronous twin (``asyncio.run``), for code that does
    not run an event loop.

    Args:
        backend_or_spec: A backend or the parsed spec to build one from.
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
    backend = _backend(backend_or_spec)
    store = _Store.open(backend, session, text_in_responses=cache_text_in_responses)
    cache = store.cache
    total = len(requests)
    keys = [store.key(r) for r in requests]
    results: list[ChatResult | None] = [None] * total
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
    budget = stall_budget_s()
    clock = stall_clock(_endpoint_key(backend))

    def collect(j: int, _req: ChatRequest, res: ChatResult) -> None:
        nonlocal done
        if _answered(res):  # a failure is not an answer: it does not restart the clock
            clock.answered()
        key = miss_keys[j]
        res = store.keep(key, miss_requests[j], res)
        for i in groups[key]:
            results[i] = res
            done += 1
            if on_result is not None:
                on_result(i, requests[i], res)
        if progress is not None:
            progress(done, total)

    if clock.stalled is None:
        async with store.ticking(on_tick):
            answered = await _within_stall_budget(
                backend.achat(miss_requests, concurrency=concurrency, on_result=collect),
                clock,
                budget,
            )
    else:  # the endpoint stalled earlier in this run: nothing is sent to it again
        answered = None
    if answered is None:  # stalled: what never came back fails (asked again on a rerun)
        for j, key in enumerate(miss_keys):
            if results[groups[key][0]] is None:
                collect(j, miss_requests[j], _stalled(clock.stalled or budget, backend.spec))
        return [r for r in results if r is not None]
    _raise_if_refused(answered)
    return [r for r in results if r is not None]


async def _within_stall_budget(
    work: Coroutine[Any, Any, list[ChatResult]], clock: StallClock, budget: float
) -> list[ChatResult] | None:
    """``await work``, or cancel it once the endpoint's clock ran past ``budget`` s.

    The clock is the run's (:mod:`llm.stall`): the time waited in this run's earlier
    batches without an answer counts too. Past the budget the clock is marked stalled
    (later batches of the run send nothing) and ``None`` is returned.
    """
    task = asyncio.ensure_future(work)
    clock.begin()
    try:
        while True:
            left = budget - clock.waited()
            if left < 0:
                clock.stall(budget)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                return None
            finished, _ = await asyncio.wait({task}, timeout=min(1.0, max(left, 0.01)))
            if finished:
                return task.result()
    except BaseException:
        task.cancel()  # Ctrl-C or an error here must not leave requests running
        raise
    finally:
        clock.end()


def _endpoint_key(backend: ChatBackend) -> str:
    """What the run's stall clocks are kept by: the server, whatever model it serves."""
    return f"{parse_spec(backend.spec).provider} {backend.endpoint()}"


def _stalled(budget: float, model: str) -> ChatResult:
    """The result of a request the endpoint never answered within the stall budget."""
    return ChatResult(
        text=None,
        finish_reason=None,
        prompt_tokens=None,
        completion_tokens=None,
        latency_ms=budget * 1000.0,
        error=(
            f"the endpoint answered nothing for {budget:g} s (stall budget, "
            f"{STALL_BUDGET_ENV}); run the same command again to retry"
        ),
        cached=False,
        cache_key="",
        attempts=0,
        model=model,
        error_kind="timeout",
    )


async def _every(seconds: float, fn: Callable[[], None]) -> None:
    while True:
        await asyncio.sleep(seconds)
        fn()


def _backend(backend_or_spec: ChatBackend | ModelSpec) -> ChatBackend:
    if isinstance(backend_or_spec, ModelSpec):
        return get_backend(backend_or_spec)
    return backend_or_spec


def _answered(res: ChatResult) -> bool:
    """A result worth keeping: no error and a text (errors are never cached)."""
    return res.error is None and res.text is not None


@dataclass(frozen=True)
class _Store:
    """The cache side of one batch call (both loops): keys, keeping results, flushing."""

    scope: CacheScope
    cache: ChatCache | None

    @classmethod
    def open(cls, backend: ChatBackend, session: Any, *, text_in_responses: bool = False) -> _Store:
        from llm.cache import CacheScope, ChatCache

        info = parse_spec(backend.spec)
        scope = CacheScope(info.provider, backend.endpoint(), info.model)
        cache = (
            ChatCache(session, text_in_responses=text_in_responses) if session is not None else None
        )
        return cls(scope, cache)

    def key(self, request: ChatRequest) -> str:
        from llm.cache import cache_key

        return cache_key(self.scope, request)

    def keep(self, key: str, request: ChatRequest, res: ChatResult) -> ChatResult:
        """The result as every caller sees it (keyed, sanitised), cached when answered."""
        from llm.cache import request_payload

        res = sanitize_result(replace(res, cache_key=key))
        # An answer without the logprobs it was asked for is incomplete: cached, it would
        # be served again after the endpoint was fixed.
        complete = res.logprobs is not None or not request.wants_logprobs()
        if self.cache is not None and _answered(res) and complete:
            self.cache.add(key, request_payload(self.scope, request), res)
        return res

    @asynccontextmanager
    async def ticking(self, on_tick: Callable[[], None] | None = None) -> AsyncIterator[None]:
        """While the block sends: a due commit (and ``on_tick``) every :data:`TICK_S` seconds;
        after it, whatever the cache still holds is written, also when the block failed."""

        def tick() -> None:
            if self.cache is not None:
                self.cache.flush_if_due()
            if on_tick is not None:
                on_tick()

        ticker = asyncio.create_task(_every(TICK_S, tick))
        try:
            yield
        finally:
            ticker.cancel()
            if self.cache is not None:
                self.cache.flush()


def _raise_if_refused(sent: Sequence[ChatResult]) -> None:
    if not sent or any(r.error is None for r in sent):
        return
    kinds = {r.error_kind for r in sent}
    if len(kinds) == 1 and next(iter(kinds)) in FATAL_KINDS:
        raise ServiceError(sent[0].error or "Model endpoint refused every request.")


async def arun_chat_chains(
    backend_or_spec: ChatBackend | ModelSpec,
    requests: Sequence[ChatRequest],
    *,
    follow_up: FollowUp,
    session: Any = None,
    concurrency: int = 16,
    progress: ProgressCallback | None = None,
) -> list[list[ChatResult]]:
    """Answer chains of requests: each reply may call for a follow-up request.

    Chain ``i`` starts with ``requests[i]``; after each result, ``follow_up(i, request,
    result)`` returns the chain's next request or ``None``. Caching is as in
    :func:`arun_chat_batch` (hits are never sent, successes are cached, errors never).

    A backend that takes requests while others are in flight (``achat_feed``: the
    OpenAI-compatible one) gets each follow-up as soon as the reply it depends on is in,
    under the same ``concurrency`` as the first requests, so a server stays as busy as with
    one flat batch instead of idling between a round of first requests and a round of
    follow-ups. Other backends (in-process: simulator, vLLM) answer in rounds.

    When the endpoint answers nothing for the stall budget
    (:func:`llm.limits.stall_budget_s`, as :func:`run_chat_batch`), the call ends: every
    chain still waiting gets a timeout result as its last (not cached, so a rerun asks it
    again).

    Args:
        backend_or_spec: A backend or the parsed spec to build one from.
        requests: The first request of every chain.
        follow_up: Called in the event-loop thread with every result (cache hits
            included), in chain order for one chain.
        session: A database session for the cache (``None``: no cache).
        concurrency: Maximum requests in flight, all chains together.
        progress: ``progress(done, total)`` over chains, as chains end.

    Returns:
        Every chain's results in order (``[first, follow-up, ...]``), in request order.

    Raises:
        ServiceError: When every request sent failed for a reason that applies to the
            whole endpoint (as :func:`run_chat_batch`).
    """
    backend = _backend(backend_or_spec)
    if not callable(getattr(backend, "achat_feed", None)):
        return await _chains_in_rounds(
            backend, requests, follow_up, session=session, concurrency=concurrency,
            progress=progress,
        )  # fmt: skip
    store = _Store.open(backend, session)
    cache = store.cache
    total = len(requests)
    chains: list[list[ChatResult]] = [[] for _ in requests]
    ended = 0

    def end_chain() -> None:
        nonlocal ended
        ended += 1
        if progress is not None:
            progress(ended, total)

    # 1. Walk every chain through the cache as far as it goes (bulk lookups, no network).
    frontier: dict[int, ChatRequest] = dict(enumerate(requests))
    to_send: dict[int, ChatRequest] = {}
    while frontier and cache is not None:
        keys = {i: store.key(r) for i, r in frontier.items()}
        hits = cache.lookup(keys.values())
        moved: dict[int, ChatRequest] = {}
        for i, req in frontier.items():
            if keys[i] not in hits:
                to_send[i] = req
                continue
            chains[i].append(hits[keys[i]])
            nxt = follow_up(i, req, hits[keys[i]])
            if nxt is None:
                end_chain()
            else:
                moved[i] = nxt
        frontier = moved
    to_send.update(frontier)  # no cache: everything is sent
    if progress is not None:
        progress(ended, total)
    if not to_send:
        return chains

    # 2. The rest over the network; follow-ups join the feed as their replies come in.
    feed: asyncio.Queue[tuple[str, ChatRequest] | None] = asyncio.Queue()
    waiting: dict[str, list[int]] = {}  # key in flight -> chains waiting for its answer
    in_flight: dict[str, ChatRequest] = {}  # key in flight -> its request
    answered: dict[str, ChatResult] = {}  # answered in this call (staged, maybe unflushed)
    sent: list[ChatResult] = []
    # The stall budget of run_chat_batch: a stalled endpoint ends the call (its chains get
    # a timeout result, asked again on a rerun) instead of holding it for hours.
    budget = stall_budget_s()
    clock = stall_clock(_endpoint_key(backend))

    def ask(i: int, req: ChatRequest | None) -> None:
        """Chain ``i`` needs ``req`` answered (``None``: the chain has ended)."""
        while req is not None:
            key = store.key(req)
            if key in waiting:  # the same request is in flight for another chain
                waiting[key].append(i)
                return
            res = answered.get(key)
            if res is None and cache is not None:
                res = cache.lookup([key]).get(key)
            if res is None:
                waiting[key] = [i]
                in_flight[key] = req
                feed.put_nowait((key, req))
                return
            chains[i].append(res)
            req = follow_up(i, req, res)
        end_chain()
        if ended == total:
            feed.put_nowait(None)

    def collect(key: str, req: ChatRequest, res: ChatResult) -> None:
        if _answered(res):  # as run_chat_batch: only an answer restarts the clock
            clock.answered()
        in_flight.pop(key, None)
        res = store.keep(key, req, res)
        sent.append(res)
        if _answered(res):
            answered[key] = res
        for i in waiting.pop(key):
            chains[i].append(res)
            ask(i, follow_up(i, req, res))

    async def answer_feed() -> list[ChatResult]:
        await backend.achat_feed(feed, concurrency=concurrency, on_result=collect)  # type: ignore[attr-defined]
        return sent

    for i, req in to_send.items():
        ask(i, req)
    finished: list[ChatResult] | None = None
    if clock.stalled is None:
        async with store.ticking():
            finished = await _within_stall_budget(answer_feed(), clock, budget)
    if finished is None:  # stalled: every chain still waiting ends with a timeout
        for key, req in list(in_flight.items()):
            res = store.keep(key, req, _stalled(clock.stalled or budget, backend.spec))
            sent.append(res)
            for i in waiting.pop(key, []):
                chains[i].append(res)
                end_chain()
        return chains
    _raise_if_refused(sent)
    return chains


async def _chains_in_rounds(
    backend: ChatBackend,
    requests: Sequence[ChatRequest],
    follow_up: FollowUp,
    *,
    session: Any,
    concurrency: int,
    progress: ProgressCallback | None,
) -> list[list[ChatResult]]:
    """Chains for backends that answer fixed batches: every chain's next request per round."""
    chains: list[list[ChatResult]] = [[] for _ in requests]
    frontier = list(enumerate(requests))
    ended = 0
    while frontier:
        results = await arun_chat_batch(
            backend, [r for _, r in frontier], session=session, concurrency=concurrency
        )
        moved = []
        for (i, req), res in zip(frontier, results, strict=True):
            chains[i].append(res)
            nxt = follow_up(i, req, res)
            if nxt is None:
                ended += 1
            else:
                moved.append((i, nxt))
        if progress is not None:
            progress(ended, len(requests))
        frontier = moved
    return chains


def _blocking(afn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """The synchronous twin of ``afn`` (``asyncio.run``): same arguments, same behaviour.

    ``asyncio.run`` cannot nest: called inside an event loop, the twin says to await ``afn``.
    """
    name = afn.__name__.removeprefix("a")

    @functools.wraps(afn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(afn(*args, **kwargs))
        raise RuntimeError(f"{name} was called inside an event loop; await a{name} instead")

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"Synchronous twin of :func:`{afn.__name__}` (``asyncio.run``).\n\n{afn.__doc__}"
    return run


run_chat_batch = _blocking(arun_chat_batch)
run_chat_chains = _blocking(arun_chat_chains)
