"""Typed requests and results shared by every backend (the contract with ``study/``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from llm.structured import ResponseFormat


class SamplingParams(BaseModel):
    """Sampling parameters (SPEC §4 reference values as defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    temperature: float = 0.7
    top_p: float = 0.98
    top_k: int | None = 50
    repetition_penalty: float | None = 1.0
    max_tokens: int = 2048
    seed: int | None = None


@dataclass(frozen=True)
class ChatMessage:
    """One chat message."""

    role: str
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make.

    ``sample_index`` distinguishes repeated samples of the same prompt; it is part of
    the cache key, so sample 0 and sample 1 are separate answers even at equal seeds.
    ``tag`` is opaque caller data (e.g. the response row key) carried to the result.
    """

    messages: tuple[ChatMessage, ...]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    sample_index: int = 0
    tag: Any = None
    # Optional extras (issue 10). Each is ``None`` unless a caller sets it, and enters the
    # cache key only when set, so requests made before the extras existed keep their keys
    # (tests/llm/test_cache_keys_pinned.py). See docs/engines.md for what each does on
    # each backend.
    logprobs: bool | None = None
    top_logprobs: int | None = None
    chat_template_kwargs: Mapping[str, Any] | None = None
    continue_final_message: bool | None = None
    add_generation_prompt: bool | None = None
    stop: tuple[str, ...] | None = None
    attempt: int | None = None
    # vLLM's server-side reasoning budget (needs --reasoning-parser / --reasoning-config)
    thinking_token_budget: int | None = None
    # Structured outputs (issue 36): the format the answer must follow and the mode it was
    # asked under (``auto``: fall back to prompt-and-repair where the endpoint refuses it;
    # ``on``: a refusal is an error). Set together by :func:`llm.structured.with_format`.
    response_format: ResponseFormat | None = None
    structured: str | None = None

    def extras(self) -> dict[str, Any]:
        """Return the extras that are set, JSON-ready (what enters the cache key).

        ``stop`` becomes a list and ``chat_template_kwargs`` a plain dict; unset extras are
        left out entirely.
        """
        out: dict[str, Any] = {}
        if self.logprobs is not None:
            out["logprobs"] = self.logprobs
        if self.top_logprobs is not None:
            out["top_logprobs"] = self.top_logprobs
        out.update(self.chat_template_args())
        if self.stop is not None:
            out["stop"] = list(self.stop)
        if self.attempt is not None:
            out["attempt"] = self.attempt
        if self.thinking_token_budget is not None:
            out["thinking_token_budget"] = self.thinking_token_budget
        if self.response_format is not None:
            out["response_format"] = self.response_format.to_json()
            out["structured"] = self.structured or "auto"
        return out

    def record(self) -> dict[str, Any]:
        """Return what a stored response keeps of the request: messages, sampling, index.

        JSON-ready (``messages`` as role/content dicts, ``sampling`` dumped); the caller
        adds its model, prompt version and context around it.
        """
        return {
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "sampling": self.sampling.model_dump(),
            "sample_index": self.sample_index,
        }

    def chat_template_args(self) -> dict[str, Any]:
        """Return the chat template switches that are set (vLLM's, not the OpenAI API's).

        ``chat_template_kwargs`` (a plain dict), ``continue_final_message`` and
        ``add_generation_prompt``, in that order; unset ones are left out.
        """
        out: dict[str, Any] = {}
        if self.chat_template_kwargs is not None:
            out["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        if self.continue_final_message is not None:
            out["continue_final_message"] = self.continue_final_message
        if self.add_generation_prompt is not None:
            out["add_generation_prompt"] = self.add_generation_prompt
        return out

    def wants_logprobs(self) -> bool:
        """Whether token logprobs were asked for (``logprobs`` or ``top_logprobs`` set)."""
        return bool(self.logprobs) or bool(self.top_logprobs)


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the top-k alternatives there.

    Attributes:
        token: The token's text as the engine decoded it (leading space included).
        logprob: Natural-log probability of this token.
        top: ``(token, logprob)`` alternatives at this position, best first (may
            include the token itself; empty when only the chosen token was returned).
    """

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ChatResult:
    """What came back for one request; ``error`` is set instead of ``text`` on failure.

    ``latency_ms`` is the wall time of the successful attempt (for a cache hit: of the
    original request); ``attempts`` counts HTTP attempts made now (0 for a cache hit).
    """

    text: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    error: str | None
    cached: bool
    cache_key: str
    attempts: int
    model: str
    simulated: bool = False
    # Added compatibly (defaults) after the first contract: the kind of failure
    # (``auth``, ``model``, ``url``, ``unreachable``, ``bad_request``, ``rate_limit``,
    # ``server``, ``timeout``, ``bad_response``, ``backend``) and the sampling seed actually
    # sent (per-sample derivation of ``SamplingParams.seed``, see ``llm.seeds``).
    error_kind: str | None = None
    seed: int | None = None
    # Token logprobs of the completion when the request asked for them (issue 10).
    logprobs: tuple[TokenLogprob, ...] | None = None
    # What was done to the model's output before anyone saw it, e.g. ``nul_replaced``
    # (NUL characters, which PostgreSQL cannot store, became U+FFFD); and the wait in
    # seconds that a ``Retry-After`` header asked for on the last failed attempt.
    output_flags: tuple[str, ...] = ()
    retry_after_s: float | None = None


ResultCallback = Callable[[int, ChatRequest, ChatResult], None]


@dataclass(frozen=True)
class ChatBatch:
    """One :meth:`ChatBackend.achat` call: the requests, the concurrency, the progress callback.

    Attributes:
        requests: The requests to answer.
        concurrency: Maximum simultaneous requests (backends answering in-process ignore it).
        on_result: ``on_result(index, request, result)`` as each request finishes.
    """

    requests: Sequence[ChatRequest]
    concurrency: int
    on_result: ResultCallback | None = None

    def done(self, index: int, result: ChatResult) -> None:
        """Tell the caller that request ``index`` has its ``result`` (when it asked to know)."""
        if self.on_result is not None:
            self.on_result(index, self.requests[index], result)

    async def in_order(
        self, answer: Callable[[ChatRequest], ChatResult], *, yield_every: int = 64
    ) -> list[ChatResult]:
        """Answer the requests one after another with a synchronous ``answer``.

        Yields to the event loop every ``yield_every`` requests so progress callbacks and
        cancellation get through.
        """
        results: list[ChatResult] = []
        for i, request in enumerate(self.requests):
            results.append(answer(request))
            self.done(i, results[-1])
            if i % yield_every == yield_every - 1:
                await asyncio.sleep(0)
        return results


class ChatBackend(Protocol):
    """A model behind a ``provider/model`` spec that answers batches of chat requests.

    A backend subclasses it and implements :meth:`answer_batch`; :meth:`achat`, what callers
    use, is the same for every backend.
    """

    spec: str
    simulated: bool

    def endpoint(self) -> str:
        """A stable, secret-free description of where requests go (part of the cache key)."""
        ...

    async def achat(
        self,
        requests: Sequence[ChatRequest],
        *,
        concurrency: int,
        on_result: ResultCallback | None = None,
    ) -> list[ChatResult]:
        """Answer every request; call ``on_result`` as each one finishes (in the loop thread).

        Returns:
            One result per request, in request order; failures carry ``error``.
        """
        return await self.answer_batch(ChatBatch(requests, concurrency, on_result))

    async def answer_batch(self, batch: ChatBatch) -> list[ChatResult]:
        """Answer the batch of one :meth:`achat` call (call ``batch.done`` for each result)."""
        ...
