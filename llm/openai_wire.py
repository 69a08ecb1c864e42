"""The wire side of the OpenAI-compatible backend: replicas, completions, failures.

The client pool and replica rotation (one ``openai`` client per base URL, a replica marked
down on connection errors and tried again later), reading a completion into text, finish
reason, token counts and logprobs (a completion without content is a failure, never an
empty answer), and turning the client's exceptions into one :class:`Failure` sentence with
its retry decision.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llm.logprobs import parse_openai_logprobs


class ClientPool:
    """A few clients with small connection pools instead of one with a large pool.

    The HTTP stack scans every pooled connection each time it places a request, so one
    pool of 64 connections spends a fifth of the client's CPU on that scan; eight pools
    of 8 do the same work for less. Each request goes to the least busy client, so no
    pool is asked for more connections than it has; the batch's semaphore still bounds
    the total in flight.
    """

    CONNECTIONS_PER_CLIENT = 8

    def __init__(self, make_client: Any, concurrency: int) -> None:
        shards = max(1, -(-concurrency // self.CONNECTIONS_PER_CLIENT))
        per = -(-concurrency // shards)
        self.clients = [make_client(per) for _ in range(shards)]
        self.busy = [0] * shards

    async def post(self, path: str, body: dict[str, Any], cast_to: Any) -> Any:
        k = min(range(len(self.busy)), key=self.busy.__getitem__)
        self.busy[k] += 1
        try:
            return await self.clients[k].post(path, body=body, cast_to=cast_to)
        finally:
            self.busy[k] -= 1

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


class Replicas:
    """The replicas behind one model name: least-in-flight routing, refusing ones skipped.

    Each replica has its own :class:`ClientPool`. A request goes to the replica with the
    fewest requests in flight among those not marked down (ties: the one used least
    recently). A replica that refuses a connection is marked down for ``retry_s``
    (doubling while it keeps refusing, up to ``max_retry_s``) and is tried again after
    that, so a restarted replica rejoins on its own.
    """

    def __init__(
        self,
        urls: Sequence[str],
        make_client: Any,
        concurrency: int,
        *,
        retry_s: float,
        max_retry_s: float = 60.0,
    ) -> None:
        self.urls = list(urls)
        self.pools = [ClientPool(lambda n, u=u: make_client(u, n), concurrency) for u in self.urls]
        self.in_flight = [0] * len(self.urls)
        self.down_until = [0.0] * len(self.urls)
        self.down_for = [0.0] * len(self.urls)
        self.last_used = [0] * len(self.urls)
        self._tick = 0
        self.retry_s = retry_s
        self.max_retry_s = max_retry_s

    def pick(self, exclude: set[int]) -> int | None:
        """The replica for the next attempt, or ``None`` when every one was excluded."""
        left = [i for i in range(len(self.urls)) if i not in exclude]
        if not left:
            return None
        now = time.monotonic()
        up = [i for i in left if self.down_until[i] <= now]
        if up:
            return min(up, key=lambda i: (self.in_flight[i], self.last_used[i]))
        return min(left, key=lambda i: self.down_until[i])  # all down: the soonest back

    def any_up(self, exclude: set[int]) -> bool:
        now = time.monotonic()
        return any(self.down_until[i] <= now for i in range(len(self.urls)) if i not in exclude)

    async def post(self, i: int, path: str, body: dict[str, Any], cast_to: Any) -> Any:
        self.in_flight[i] += 1
        self._tick += 1
        self.last_used[i] = self._tick
        try:
            return await self.pools[i].post(path, body, cast_to)
        finally:
            self.in_flight[i] -= 1

    def mark_down(self, i: int) -> None:
        wait = min(self.max_retry_s, self.down_for[i] * 2 if self.down_for[i] else self.retry_s)
        self.down_for[i] = wait
        self.down_until[i] = time.monotonic() + wait

    def mark_up(self, i: int) -> None:
        self.down_for[i] = 0.0
        self.down_until[i] = 0.0

    async def close(self) -> None:
        for pool in self.pools:
            await pool.close()


@dataclass(frozen=True)
class Failure:
    kind: str
    message: str
    retryable: bool
    retry_after: float | None = None


def completion_type() -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion


def connection_limits(concurrency: int) -> Any:
    # The openai client ships its own httpx flavour (httpx2 in recent releases); build the
    # connection limits with the same module so pooled connections match the concurrency.
    import importlib

    try:
        hx: Any = importlib.import_module("httpx2")
    except ImportError:  # pragma: no cover - older openai releases use httpx
        hx = importlib.import_module("httpx")
    return hx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)


Parsed = tuple[str, str | None, int | None, int | None, str, Any]


def parse_completion(resp: Any) -> Parsed | Failure:
    # A completion without choices or with ``content: null`` is a failed request, not an
    # empty answer: it is retried and never cached (a server that put everything into
    # ``reasoning_content`` or crashed mid-answer must not leave a blank "answer").
    try:
        choice = resp.choices[0]
        text = choice.message.content
        usage = resp.usage
    except (AttributeError, IndexError, TypeError):
        return Failure(
            "bad_response", "The model endpoint sent a completion without choices.", True
        )
    if text is None:
        return Failure(
            "bad_response",
            "The model endpoint sent a completion with no content (content: null).",
            True,
        )
    return (
        text,
        choice.finish_reason,
        usage.prompt_tokens if usage is not None else None,
        usage.completion_tokens if usage is not None else None,
        str(resp.model or ""),
        parse_openai_logprobs(getattr(choice, "logprobs", None)),
    )


def retry_after_ms(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value) / 1000.0)
    except ValueError:
        return None


def server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
    text = str(msg if msg else "").strip().replace("\n", " ").rstrip(".")
    return text[:200]


def server_code(exc: Any) -> str | None:
    code = getattr(exc, "code", None)
    if code:
        return str(code)
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("code"):
            return str(err["code"])
    return None


def causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 10:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def is_dns_failure(exc: BaseException) -> bool:
    for c in causes(exc):
        if isinstance(c, socket.gaierror):
            return True
        text = str(c).lower()
        if "name or service not known" in text or "nodename nor servname" in text:
            return True
        if "temporary failure in name resolution" in text or "no address associated" in text:
            return True
    return False


def root_reason(exc: BaseException) -> str:
    chain = causes(exc)
    for c in reversed(chain):
        if isinstance(c, ConnectionRefusedError) or "refused" in str(c).lower():
            return "connection refused"
    last = chain[-1]
    text = str(last).strip() or type(last).__name__
    return text[:120]
