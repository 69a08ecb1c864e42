"""OpenAI-compatible endpoints through the official ``openai`` async client.

The client's own retries are disabled (``max_retries=0``) so that every retry is ours:
bounded by :class:`~llm.retry.RetryPolicy`, spread with full jitter, honouring
``Retry-After``, and counted in ``ChatResult.attempts`` and :class:`BackendStats`.
"""

from __future__ import annotations

import asyncio
import base64
import random
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote, urlsplit

from llm.logprobs import parse_openai_logprobs
from llm.retry import FATAL_KINDS, RETRYABLE_STATUS, RetryPolicy, backoff_delay, parse_retry_after
from llm.seeds import request_seed
from llm.specs import clean_url
from llm.types import ChatRequest, ChatResult, ResultCallback
from storage.safe_text import redact_secrets


@dataclass
class BackendStats:
    """Counters of one backend over its lifetime (for tests, logs and the CLI summary)."""

    requests: int = 0
    attempts: int = 0
    retries: int = 0
    failures: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    # Successful answers per replica URL, and requests re-sent at once to another replica
    # because the one picked refused the connection.
    by_replica: dict[str, int] = field(default_factory=dict)
    replica_skips: int = 0


class _ClientPool:
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


class _Replicas:
    """The replicas behind one model name: least-in-flight routing, refusing ones skipped.

    Each replica has its own :class:`_ClientPool`. A request goes to the replica with the
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
        self.pools = [_ClientPool(lambda n, u=u: make_client(u, n), concurrency) for u in self.urls]
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
class _Failure:
    kind: str
    message: str
    retryable: bool
    retry_after: float | None = None


@dataclass
class _BatchState:
    """Shared by the requests of one batch: a fatal refusal stops the ones not yet sent."""

    fatal: _Failure | None = None
    any_success: bool = False


class OpenAIBackend:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        spec: The model spec this backend answers for (``openai/...``, ``openai-api/...``).
        base_url: The endpoint, e.g. ``http://127.0.0.1:8000/v1``.
        api_key: The key (from the environment; kept in memory only).
        model: The model id sent in each request.
        vllm_extras: Send ``top_k`` and ``repetition_penalty`` through ``extra_body``
            (vLLM and most compatible servers accept them; the OpenAI API rejects them).
        max_completion_tokens: Send ``max_completion_tokens`` instead of ``max_tokens``
            (the OpenAI API's current name; compatible servers still expect ``max_tokens``).
        timeout_s: Per-attempt timeout.
        retry: The retry policy.
        rng: Random source of the backoff jitter (seed it for reproducible timing tests).
        key_env: Name of the variable the key came from, for error hints.
        replica_retry_s: With several comma-separated ``base_url`` replicas, how long a
            replica that refused a connection is left out before it is tried again.
    """

    simulated = False

    def __init__(
        self,
        spec: str,
        *,
        base_url: str,
        api_key: str,
        model: str,
        vllm_extras: bool = True,
        max_completion_tokens: bool = False,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        rng: random.Random | None = None,
        key_env: str | None = None,
        replica_retry_s: float = 5.0,
    ) -> None:
        self.spec = spec
        self.model = model
        self._base_urls = [u.strip().rstrip("/") for u in base_url.split(",") if u.strip()]
        if not self._base_urls:
            raise ValueError("base_url names no URL")
        self._base_url = self._base_urls[0]
        self.replica_retry_s = replica_retry_s
        self._api_key = api_key
        self._vllm_extras = vllm_extras
        self._max_completion_tokens = max_completion_tokens
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._rng = rng or random.Random()
        self._key_env = key_env
        self.stats = BackendStats()

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIBackend(spec={self.spec!r}, endpoint={self.endpoint()!r})"

    def endpoint(self) -> str:
        """Return the secret-free base URL (part of the cache key).

        Several replicas: their cleaned URLs sorted and comma-joined, so the order they are
        listed in does not matter; one URL gives exactly the key it always gave.
        """
        if len(self._base_urls) == 1:
            return clean_url(self._base_url)
        return ",".join(sorted(dict.fromkeys(clean_url(u) for u in self._base_urls)))

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """Return the JSON body of ``POST /chat/completions`` for one request.

        vLLM's sampling extras (``top_k``, ``repetition_penalty``) sit at the top level,
        exactly where ``extra_body`` would put them.
        """
        sp = request.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": sp.temperature,
            "top_p": sp.top_p,
        }
        if self._max_completion_tokens:
            body["max_completion_tokens"] = sp.max_tokens
        else:
            body["max_tokens"] = sp.max_tokens
        seed = request_seed(request)
        if seed is not None:
            body["seed"] = seed
        if self._vllm_extras:
            if sp.top_k is not None:
                body["top_k"] = sp.top_k
            if sp.repetition_penalty is not None:
                body["repetition_penalty"] = sp.repetition_penalty
        # Request extras (issue 10): standard parameters go to the top level; the chat
        # template switches are vLLM's (``extra_body``, i.e. also the top level of the
        # JSON) and are sent only to compatible servers, since the OpenAI API has no chat
        # template and rejects unknown parameters.
        if request.wants_logprobs():
            body["logprobs"] = True
            if request.top_logprobs is not None:
                body["top_logprobs"] = request.top_logprobs
        elif request.logprobs is False:
            body["logprobs"] = False
        if request.stop is not None:
            body["stop"] = list(request.stop)
        if self._vllm_extras:
            if request.chat_template_kwargs is not None:
                body["chat_template_kwargs"] = dict(request.chat_template_kwargs)
            if request.continue_final_message is not None:
                body["continue_final_message"] = request.continue_final_message
            if request.add_generation_prompt is not None:
                body["add_generation_prompt"] = request.add_generation_prompt
            if request.thinking_token_budget is not None:
                body["thinking_token_budget"] = request.thinking_token_budget
        return body

    async def achat(
        self,
        requests: Sequence[ChatRequest],
        *,
        concurrency: int,
        on_result: ResultCallback | None = None,
    ) -> list[ChatResult]:
        """Answer every request with at most ``concurrency`` in flight.

        Args:
            requests: The requests, answered in any order.
            concurrency: Maximum simultaneous HTTP requests (backoff waits do not count).
            on_result: Called in the event-loop thread as each request finishes.

        Returns:
            One result per request, in request order; failures carry ``error``.
        """
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        pool = _Replicas(
            self._base_urls, self._make_client, concurrency, retry_s=self.replica_retry_s
        )
        sem = asyncio.Semaphore(concurrency)
        state = _BatchState()
        results: list[ChatResult | None] = [None] * len(requests)

        async def run_one(i: int, req: ChatRequest) -> None:
            res = await self._one(pool, req, sem, state)
            results[i] = res
            if on_result is not None:
                on_result(i, req, res)

        tasks = [asyncio.ensure_future(run_one(i, r)) for i, r in enumerate(requests)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            # A callback failed or the run was interrupted: stop the requests still
            # queued or in flight instead of letting them finish unobserved.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            await pool.close()
        return [r for r in results if r is not None]

    async def achat_feed(
        self,
        feed: asyncio.Queue[tuple[str, ChatRequest] | None],
        *,
        concurrency: int,
        on_result: Callable[[str, ChatRequest, ChatResult], None],
    ) -> None:
        """Answer requests as they arrive on ``feed`` until ``None`` arrives.

        What :meth:`achat` does for a fixed list, for a caller that adds requests while
        others are in flight (a follow-up sent as soon as the reply it depends on is in:
        :func:`llm.batch.arun_chat_chains`). The same replicas, semaphore and batch state
        serve every request of the feed, so ``concurrency`` bounds them all together.

        Args:
            feed: ``(tag, request)`` pairs, then ``None`` once nothing more will come.
            concurrency: Maximum simultaneous HTTP requests.
            on_result: ``on_result(tag, request, result)`` in the event-loop thread as each
                request finishes (it may put further requests on ``feed``).
        """
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        pool = _Replicas(
            self._base_urls, self._make_client, concurrency, retry_s=self.replica_retry_s
        )
        sem = asyncio.Semaphore(concurrency)
        state = _BatchState()
        tasks: set[asyncio.Task[None]] = set()
        errors: list[Exception] = []

        async def run_one(tag: str, req: ChatRequest) -> None:
            try:
                on_result(tag, req, await self._one(pool, req, sem, state))
            except Exception as exc:  # a callback failed: stop the feed, raise it below
                errors.append(exc)
                feed.put_nowait(None)

        try:
            while not errors and (item := await feed.get()) is not None:
                task = asyncio.ensure_future(run_one(*item))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            while not errors and (pending := [t for t in tasks if not t.done()]):
                await asyncio.wait(pending)
            if errors:
                raise errors[0]
        except BaseException:
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*list(tasks), return_exceptions=True)
            raise
        finally:
            await pool.close()

    def _make_client(self, base_url: str, connections: int) -> Any:
        import openai

        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=base_url,
            max_retries=0,
            timeout=self.timeout_s,
            http_client=openai.DefaultAsyncHttpxClient(limits=_limits(connections)),
        )

    async def _one(
        self, pool: _Replicas, req: ChatRequest, sem: asyncio.Semaphore, state: _BatchState
    ) -> ChatResult:
        body = self.request_body(req)
        seed = body.get("seed")
        self.stats.requests += 1
        attempt = 0
        while True:
            async with sem:
                # Checked after the wait for a slot: the endpoint may have refused this
                # batch meanwhile for a reason that applies to every request (bad key,
                # unknown model, bad URL), and then the rest are not sent at all.
                if state.fatal is not None and not state.any_success:
                    return self._error(state.fatal, attempt, seed)
                attempt += 1
                tried: set[int] = set()
                while True:
                    replica = pool.pick(tried)
                    assert replica is not None  # tried grows only while another is up
                    self.stats.attempts += 1
                    start = time.perf_counter()
                    try:
                        # The client's documented low-level ``post``: same HTTP stack,
                        # errors and response model as ``chat.completions.create``, minus
                        # the TypedDict transform of the body (~1 ms CPU per request, a
                        # third of the client's cost), a no-op on our plain-JSON bodies.
                        resp = await pool.post(
                            replica, "/chat/completions", body, _completion_type()
                        )
                        failure = None
                    except Exception as exc:  # classified below; nothing escapes a batch
                        failure = self._classify(exc, pool.urls[replica])
                    latency_ms = (time.perf_counter() - start) * 1000.0
                    if failure is None:
                        pool.mark_up(replica)
                        url = pool.urls[replica]
                        self.stats.by_replica[url] = self.stats.by_replica.get(url, 0) + 1
                    elif failure.kind == "unreachable" and len(pool.urls) > 1:
                        # A replica refusing connections: leave it out for a while and
                        # send this request at once to another one that is up (this does
                        # not use up an attempt; the replica is tried again later).
                        pool.mark_down(replica)
                        tried.add(replica)
                        if pool.any_up(tried):
                            self.stats.replica_skips += 1
                            continue
                    break
            if failure is None:
                parsed = _parse_completion(resp)
                if isinstance(parsed, _Failure):
                    failure = parsed
                else:
                    state.any_success = True
                    text, finish, ptok, ctok, model_id, logprobs = parsed
                    return ChatResult(
                        text=text,
                        finish_reason=finish,
                        prompt_tokens=ptok,
                        completion_tokens=ctok,
                        latency_ms=latency_ms,
                        error=None,
                        cached=False,
                        cache_key="",
                        attempts=attempt,
                        model=model_id or self.model,
                        simulated=bool(model_id and model_id.startswith("sim/")),
                        seed=seed,
                        logprobs=logprobs if req.wants_logprobs() else None,
                    )
            too_long = (
                failure.retry_after is not None
                and failure.retry_after > self.retry.max_retry_after_s
            )
            if not failure.retryable or attempt >= self.retry.max_attempts or too_long:
                if failure.kind in FATAL_KINDS and state.fatal is None:
                    state.fatal = failure
                if too_long:
                    failure = replace(
                        failure,
                        message=f"{failure.message.rstrip('.')} (Retry-After asked for "
                        f"{failure.retry_after:g} s, longer than the "
                        f"{self.retry.max_retry_after_s:g} s a batch waits).",
                    )
                return self._error(failure, attempt, seed)
            self.stats.retries += 1
            await asyncio.sleep(backoff_delay(attempt, self.retry, self._rng, failure.retry_after))

    def _error(self, failure: _Failure, attempts: int, seed: int | None) -> ChatResult:
        self.stats.failures += 1
        self.stats.by_kind[failure.kind] = self.stats.by_kind.get(failure.kind, 0) + 1
        return ChatResult(
            text=None,
            finish_reason=None,
            prompt_tokens=None,
            completion_tokens=None,
            latency_ms=0.0,
            error=self._redact(failure.message),
            cached=False,
            cache_key="",
            attempts=attempts,
            model=self.model,
            simulated=False,
            error_kind=failure.kind,
            seed=seed,
            retry_after_s=failure.retry_after,
        )

    def _redact(self, text: str) -> str:
        """Hide every secret this backend knows of, in plain and base64 form.

        A key in the base URL's user-info reaches an error text as the URL itself or as
        the ``Authorization: Basic`` value (base64 of ``user:key``), so both are removed
        before anything is stored or shown.
        """
        secrets = [self._api_key or ""]
        parts = urlsplit(self._base_url)
        if parts.password:
            secrets += [parts.password, unquote(parts.password)]
        if "@" in parts.netloc:
            userinfo = unquote(parts.netloc.rsplit("@", 1)[0])
            secrets += [userinfo, base64.b64encode(userinfo.encode()).decode()]
        for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
            text = text.replace(secret, "***")
        return redact_secrets(text)

    def _classify(self, exc: BaseException, url: str | None = None) -> _Failure:
        import openai

        where = f"Model endpoint {clean_url(url) if url else self.endpoint()}"
        if isinstance(exc, openai.APITimeoutError):
            return _Failure("timeout", f"{where} did not answer within {self.timeout_s:g} s.", True)
        if isinstance(exc, openai.APIConnectionError):
            if _is_dns_failure(exc):
                host = urlsplit(url or self._base_url).hostname
                return _Failure(
                    "url", f"{where}: host {host!r} could not be resolved (check the URL).", False
                )
            reason = _root_reason(exc)
            return _Failure("unreachable", f"{where} is unreachable ({reason}).", True)
        if isinstance(exc, openai.APIStatusError):
            return self._classify_status(exc, where)
        if isinstance(exc, openai.APIResponseValidationError | ValueError):
            return _Failure("bad_response", f"{where} sent an unreadable response.", True)
        return _Failure("backend", self._redact(f"{where}: {type(exc).__name__}: {exc}"), False)

    def _classify_status(self, exc: Any, where: str) -> _Failure:
        status = int(exc.status_code)
        detail = self._redact(_server_message(exc))
        if status == 401:
            hint = f"; check {self._key_env}" if self._key_env else ""
            # The server's own text is dropped: OpenAI echoes a masked key in it.
            return _Failure("auth", f"{where} rejected the API key (401){hint}.", False)
        if status == 403:
            return _Failure("auth", f"{where} refused access with this API key (403).", False)
        if status == 404:
            code = _server_code(exc)
            if code == "model_not_found" or "model" in detail.lower():
                return _Failure(
                    "model", f"{where} does not serve model {self.model!r} (404).", False
                )
            return _Failure(
                "url",
                f"{where} has no /chat/completions route (404); check the base URL "
                "(it usually ends in /v1).",
                False,
            )
        if status in RETRYABLE_STATUS:
            headers = exc.response.headers
            retry_after = _retry_after_ms(headers.get("retry-after-ms"))
            if retry_after is None:
                retry_after = parse_retry_after(headers.get("retry-after"))
            kind = "rate_limit" if status == 429 else ("timeout" if status == 408 else "server")
            msg = f"{where} answered {status}" + (f": {detail}" if detail else "") + "."
            return _Failure(kind, msg, True, retry_after)
        if status in (400, 413, 422):
            msg = f"{where} rejected the request ({status})" + (f": {detail}" if detail else "")
            return _Failure("bad_request", msg + ".", False)
        msg = f"{where} answered {status}" + (f": {detail}" if detail else "")
        return _Failure("server", msg + ".", False)


def _completion_type() -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion


def _limits(concurrency: int) -> Any:
    # The openai client ships its own httpx flavour (httpx2 in recent releases); build the
    # connection limits with the same module so pooled connections match the concurrency.
    import importlib

    try:
        hx: Any = importlib.import_module("httpx2")
    except ImportError:  # pragma: no cover - older openai releases use httpx
        hx = importlib.import_module("httpx")
    return hx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)


_Parsed = tuple[str, str | None, int | None, int | None, str, Any]


def _parse_completion(resp: Any) -> _Parsed | _Failure:
    # A completion without choices or with ``content: null`` is a failed request, not an
    # empty answer: it is retried and never cached (a server that put everything into
    # ``reasoning_content`` or crashed mid-answer must not leave a blank "answer").
    try:
        choice = resp.choices[0]
        text = choice.message.content
        usage = resp.usage
    except (AttributeError, IndexError, TypeError):
        return _Failure(
            "bad_response", "The model endpoint sent a completion without choices.", True
        )
    if text is None:
        return _Failure(
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


def _retry_after_ms(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value) / 1000.0)
    except ValueError:
        return None


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
    text = str(msg if msg else "").strip().replace("\n", " ").rstrip(".")
    return text[:200]


def _server_code(exc: Any) -> str | None:
    code = getattr(exc, "code", None)
    if code:
        return str(code)
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("code"):
            return str(err["code"])
    return None


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 10:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def _is_dns_failure(exc: BaseException) -> bool:
    for c in _causes(exc):
        if isinstance(c, socket.gaierror):
            return True
        text = str(c).lower()
        if "name or service not known" in text or "nodename nor servname" in text:
            return True
        if "temporary failure in name resolution" in text or "no address associated" in text:
            return True
    return False


def _root_reason(exc: BaseException) -> str:
    chain = _causes(exc)
    for c in reversed(chain):
        if isinstance(c, ConnectionRefusedError) or "refused" in str(c).lower():
            return "connection refused"
    last = chain[-1]
    text = str(last).strip() or type(last).__name__
    return text[:120]
