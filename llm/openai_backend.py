"""OpenAI-compatible endpoints through the official ``openai`` async client.

The client's own retries are disabled (``max_retries=0``) so that every retry is ours:
bounded by :class:`~llm.retry.RetryPolicy`, spread with full jitter, honouring
``Retry-After``, and counted in ``ChatResult.attempts`` and :class:`BackendStats`.
"""

from __future__ import annotations

import asyncio
import base64
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote, urlsplit

from llm.openai_wire import (
    Failure,
    Replicas,
    completion_type,
    connection_limits,
    is_dns_failure,
    parse_completion,
    retry_after_ms,
    root_reason,
    server_code,
    server_message,
)
from llm.retry import FATAL_KINDS, RETRYABLE_STATUS, RetryPolicy, backoff_delay, parse_retry_after
from llm.seeds import request_seed
from llm.specs import clean_url, is_simulator_model_id
from llm.structured import FLAG_FALLBACK, FLAG_IGNORED, SUPPORT, ResponseFormat
from llm.types import ChatBackend, ChatBatch, ChatRequest, ChatResult
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


@dataclass
class _BatchState:
    """Shared by the requests of one batch: a fatal refusal stops the ones not yet sent."""

    fatal: Failure | None = None
    any_success: bool = False


class OpenAIBackend(ChatBackend):
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

    def request_body(self, request: ChatRequest, *, send_format: bool = True) -> dict[str, Any]:
        """Return the JSON body of ``POST /chat/completions`` for one request.

        vLLM's sampling extras (``top_k``, ``repetition_penalty``) sit at the top level,
        exactly where ``extra_body`` would put them. The request's response format is sent
        unless ``send_format`` is false (see :meth:`format_body`).
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
            body.update(request.chat_template_args())
            if request.thinking_token_budget is not None:
                body["thinking_token_budget"] = request.thinking_token_budget
        if send_format and request.response_format is not None:
            body.update(self.format_body(request.response_format))
        return body

    def format_body(self, fmt: ResponseFormat) -> dict[str, Any]:
        """The body fields that ask for ``fmt``; empty when this endpoint has no form of it.

        A JSON schema goes as the standard ``response_format`` (``json_schema``, strict),
        which vLLM's server takes too; choice and regex exist only as vLLM's
        ``structured_outputs`` extra (vLLM refuses a ``structured_outputs`` that only sets
        options next to a ``response_format``, so the two are never combined).
        """
        if fmt.kind == "json_schema":
            schema = fmt.to_json()["schema"]
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": fmt.name, "schema": schema, "strict": True},
                }
            }
        if not self._vllm_extras:
            return {}
        if fmt.kind == "choice":
            return {"structured_outputs": {"choice": list(fmt.choices or ())}}
        return {"structured_outputs": {"regex": fmt.pattern}}

    def _format_plan(self, req: ChatRequest) -> tuple[bool, str | None]:
        """Whether to send the request's format now, and the flag its answer gets.

        Not sent (flag :data:`~llm.structured.FLAG_FALLBACK`): the endpoint refused formats
        earlier in this process, or it has no form of this one (choice/regex on the OpenAI
        API), and the mode is ``auto``.
        """
        fmt = req.response_format
        if fmt is None:
            return False, None
        if SUPPORT.get(self.endpoint()).refused is not None or not self.format_body(fmt):
            return False, FLAG_FALLBACK
        return True, None

    def _batch_parts(self, concurrency: int) -> tuple[Replicas, asyncio.Semaphore, _BatchState]:
        """What one batch's requests share: the replicas, the semaphore, the batch state.

        Raises:
            ValueError: ``concurrency`` is below 1.
        """
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        pool = Replicas(
            self._base_urls, self._make_client, concurrency, retry_s=self.replica_retry_s
        )
        return pool, asyncio.Semaphore(concurrency), _BatchState()

    async def answer_batch(self, batch: ChatBatch) -> list[ChatResult]:
        """Answer every request with at most ``batch.concurrency`` HTTP requests in flight.

        Backoff waits do not count towards the concurrency; ``batch.done`` is called in the
        event-loop thread as each request finishes.
        """
        pool, sem, state = self._batch_parts(batch.concurrency)
        results: list[ChatResult | None] = [None] * len(batch.requests)

        async def run_one(i: int, req: ChatRequest) -> None:
            res = await self._one(pool, req, sem, state)
            results[i] = res
            batch.done(i, res)

        tasks = [asyncio.ensure_future(run_one(i, r)) for i, r in enumerate(batch.requests)]
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
        pool, sem, state = self._batch_parts(concurrency)
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
            http_client=openai.DefaultAsyncHttpxClient(limits=connection_limits(connections)),
        )

    async def _one(
        self, pool: Replicas, req: ChatRequest, sem: asyncio.Semaphore, state: _BatchState
    ) -> ChatResult:
        send_format, flag = self._format_plan(req)
        if flag is not None and req.structured == "on":
            return self._error(self._format_refusal(req), 0, request_seed(req))
        body = self.request_body(req, send_format=send_format)
        refusal: str | None = None
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
                        # The client's timeout acts per read: a server dripping one byte
                        # every 2 s never trips a 5 s timeout. The deadline bounds the
                        # attempt's whole time (connect, wait, every read) instead.
                        async with asyncio.timeout(self.timeout_s):
                            # The client's documented low-level ``post``: same HTTP stack,
                            # errors and response model as ``chat.completions.create``,
                            # minus the TypedDict transform of the body (~1 ms CPU per
                            # request, a third of the client's cost), a no-op on our
                            # plain-JSON bodies.
                            resp = await pool.post(
                                replica, "/chat/completions", body, completion_type()
                            )
                        failure = None
                    except TimeoutError:
                        failure = Failure(
                            "timeout",
                            f"Model endpoint {clean_url(pool.urls[replica])} did not finish "
                            f"its answer within {self.timeout_s:g} s.",
                            True,
                        )
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
            if failure is not None and send_format and failure.kind == "bad_request":
                # Refused with its format: in mode auto ask at once without it; the endpoint
                # is marked as refusing formats only if that request is accepted (a 400 for
                # another reason, e.g. a prompt too long, says nothing about formats).
                if req.structured == "on":
                    return self._error(self._format_refusal(req, failure.message), attempt, seed)
                refusal, send_format, flag = failure.message, False, FLAG_FALLBACK
                body = self.request_body(req, send_format=False)
                continue
            if failure is None and refusal is not None:
                SUPPORT.refused(self.endpoint(), refusal)
            if failure is None:
                parsed = parse_completion(resp)
                if isinstance(parsed, Failure):
                    failure = parsed
                else:
                    state.any_success = True
                    text, finish, ptok, ctok, model_id, logprobs = parsed
                    if send_format and req.response_format is not None:
                        followed = req.response_format.accepts(text)
                        SUPPORT.answered(self.endpoint(), followed)
                        flag = None if followed else FLAG_IGNORED
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
                        simulated=is_simulator_model_id(model_id),
                        seed=seed,
                        logprobs=logprobs if req.wants_logprobs() else None,
                        output_flags=(flag,) if flag else (),
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

    def _format_refusal(self, req: ChatRequest, detail: str | None = None) -> Failure:
        fmt = req.response_format
        kind = fmt.kind if fmt is not None else "structured"
        why = detail or SUPPORT.get(self.endpoint()).refused
        if why is None:
            why = f"Model endpoint {self.endpoint()} has no form of a {kind} format"
        return Failure(
            "bad_request",
            f"{why.rstrip('.')}; --structured on allows no fallback (auto falls back to "
            "prompt-and-repair).",
            False,
        )

    def _error(self, failure: Failure, attempts: int, seed: int | None) -> ChatResult:
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

    def _classify(self, exc: BaseException, url: str | None = None) -> Failure:
        import openai

        where = f"Model endpoint {clean_url(url) if url else self.endpoint()}"
        if isinstance(exc, openai.APITimeoutError):
            return Failure("timeout", f"{where} did not answer within {self.timeout_s:g} s.", True)
        if isinstance(exc, openai.APIConnectionError):
            if is_dns_failure(exc):
                host = urlsplit(url or self._base_url).hostname
                return Failure(
                    "url", f"{where}: host {host!r} could not be resolved (check the URL).", False
                )
            reason = root_reason(exc)
            return Failure("unreachable", f"{where} is unreachable ({reason}).", True)
        if isinstance(exc, openai.APIStatusError):
            return self._classify_status(exc, where)
        if isinstance(exc, openai.APIResponseValidationError | ValueError):
            return Failure("bad_response", f"{where} sent an unreadable response.", True)
        return Failure("backend", self._redact(f"{where}: {type(exc).__name__}: {exc}"), False)

    def _classify_status(self, exc: Any, where: str) -> Failure:
        status = int(exc.status_code)
        detail = self._redact(server_message(exc))
        if status == 401:
            hint = f"; check {self._key_env}" if self._key_env else ""
            # The server's own text is dropped: OpenAI echoes a masked key in it.
            return Failure("auth", f"{where} rejected the API key (401){hint}.", False)
        if status == 403:
            return Failure("auth", f"{where} refused access with this API key (403).", False)
        if status == 404:
            code = server_code(exc)
            if code == "model_not_found" or "model" in detail.lower():
                return Failure(
                    "model", f"{where} does not serve model {self.model!r} (404).", False
                )
            return Failure(
                "url",
                f"{where} has no /chat/completions route (404); check the base URL "
                "(it usually ends in /v1).",
                False,
            )
        if status in RETRYABLE_STATUS:
            headers = exc.response.headers
            retry_after = retry_after_ms(headers.get("retry-after-ms"))
            if retry_after is None:
                retry_after = parse_retry_after(headers.get("retry-after"))
            kind = "rate_limit" if status == 429 else ("timeout" if status == 408 else "server")
            msg = f"{where} answered {status}" + (f": {detail}" if detail else "") + "."
            return Failure(kind, msg, True, retry_after)
        if status in (400, 413, 422):
            msg = f"{where} rejected the request ({status})" + (f": {detail}" if detail else "")
            return Failure("bad_request", msg + ".", False)
        msg = f"{where} answered {status}" + (f": {detail}" if detail else "")
        return Failure("server", msg + ".", False)
