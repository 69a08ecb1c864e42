"""How long one request may take and how often it is tried: CLI options, env, defaults.

Front ends set the limits once for everything a command does (generation, labelers,
judges, the question filter) with :func:`use_limits`; backends built meanwhile by
:func:`llm.backends.get_backend` read them through :func:`current_limits`. Precedence:
an explicit argument of ``get_backend``, then :func:`use_limits`, then the environment
(``DRIFTLENS_REQUEST_TIMEOUT_S``, ``DRIFTLENS_MAX_ATTEMPTS``), then the defaults.

A context variable (not a global) carries them, so concurrent commands in one process
(the Streamlit app) do not see each other's limits.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from storage.errors import ConfigError

TIMEOUT_ENV = "DRIFTLENS_REQUEST_TIMEOUT_S"
MAX_ATTEMPTS_ENV = "DRIFTLENS_MAX_ATTEMPTS"
LABELER_MAX_TOKENS_ENV = "DRIFTLENS_LABELER_MAX_TOKENS"
JUDGE_MAX_TOKENS_ENV = "DRIFTLENS_JUDGE_MAX_TOKENS"
LABEL_CONCURRENCY_ENV = "DRIFTLENS_LABEL_CONCURRENCY"
STALL_BUDGET_ENV = "DRIFTLENS_STALL_BUDGET_S"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_ATTEMPTS = 6
#: A batch whose endpoint answered nothing for this long (and at least 2.5 request
#: timeouts) stops: a stalled endpoint otherwise kept a run going for 741-900 s.
DEFAULT_STALL_BUDGET_S = 300.0


@dataclass(frozen=True)
class RequestLimits:
    """Per-request limits; ``None`` means "not set here" (the next source decides)."""

    timeout_s: float | None = None
    max_attempts: int | None = None
    # Token budgets of classification requests (LLM labelers; judges and the question
    # filter) and the requests in flight of LLM labeling. Changing a budget changes the
    # requests, so their cache keys; the defaults keep today's keys.
    labeler_max_tokens: int | None = None
    judge_max_tokens: int | None = None
    label_concurrency: int | None = None

    def __post_init__(self) -> None:
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ConfigError("The request timeout must be a positive number of seconds.")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ConfigError("--max-attempts must be at least 1.")
        for name in ("labeler_max_tokens", "judge_max_tokens", "label_concurrency"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"The {name.replace('_', ' ')} must be at least 1.")


_LIMITS: ContextVar[RequestLimits | None] = ContextVar("driftlens_request_limits", default=None)


@contextmanager
def use_limits(
    *,
    timeout_s: float | None = None,
    max_attempts: int | None = None,
    labeler_max_tokens: int | None = None,
    judge_max_tokens: int | None = None,
    label_concurrency: int | None = None,
) -> Iterator[RequestLimits]:
    """Set the limits of every backend and classifier built inside the ``with`` block.

    Values left ``None`` keep what an outer block or the environment says.

    Raises:
        ConfigError: A non-positive timeout, budget or concurrency, or no attempt.
    """
    outer = _LIMITS.get() or RequestLimits()
    limits = RequestLimits(
        timeout_s if timeout_s is not None else outer.timeout_s,
        max_attempts if max_attempts is not None else outer.max_attempts,
        labeler_max_tokens if labeler_max_tokens is not None else outer.labeler_max_tokens,
        judge_max_tokens if judge_max_tokens is not None else outer.judge_max_tokens,
        label_concurrency if label_concurrency is not None else outer.label_concurrency,
    )
    token = _LIMITS.set(limits)
    try:
        yield limits
    finally:
        _LIMITS.reset(token)


def _env_number(env: Mapping[str, str], name: str, kind: type[float] | type[int]) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a {kind.__name__}.") from None
    return float(value)


def current_limits(env: Mapping[str, str] | None = None) -> tuple[float, int]:
    """Return ``(timeout_s, max_attempts)`` in force now (see the module docstring).

    Raises:
        ConfigError: An environment variable is malformed or out of range.
    """
    source = os.environ if env is None else env
    chosen = _LIMITS.get() or RequestLimits()
    timeout = chosen.timeout_s
    if timeout is None:
        timeout = _env_number(source, TIMEOUT_ENV, float)
    attempts: float | None = chosen.max_attempts
    if attempts is None:
        attempts = _env_number(source, MAX_ATTEMPTS_ENV, int)
    checked = RequestLimits(
        timeout if timeout is not None else DEFAULT_TIMEOUT_S,
        int(attempts) if attempts is not None else DEFAULT_MAX_ATTEMPTS,
    )
    assert checked.timeout_s is not None and checked.max_attempts is not None
    return checked.timeout_s, checked.max_attempts


def _positive_int(name: str, chosen: int | None, env_name: str, default: int) -> int:
    value = chosen
    if value is None:
        raw = _env_number(os.environ, env_name, int)
        value = int(raw) if raw is not None else None
    if value is None:
        return default
    if value < 1:
        raise ConfigError(f"{env_name} must be at least 1.")
    return value


def labeler_max_tokens(default: int) -> int:
    """Token budget of one LLM-labeler request (``--max-tokens`` of label/round, env)."""
    chosen = (_LIMITS.get() or RequestLimits()).labeler_max_tokens
    return _positive_int("labeler", chosen, LABELER_MAX_TOKENS_ENV, default)


def judge_max_tokens(default: int) -> int:
    """Token budget of one judge or question-filter request (``--max-tokens``, env)."""
    chosen = (_LIMITS.get() or RequestLimits()).judge_max_tokens
    return _positive_int("judge", chosen, JUDGE_MAX_TOKENS_ENV, default)


def label_concurrency(default: int) -> int:
    """Requests in flight of LLM labeling (``--concurrency`` of label/round, env)."""
    chosen = (_LIMITS.get() or RequestLimits()).label_concurrency
    return _positive_int("concurrency", chosen, LABEL_CONCURRENCY_ENV, default)


def stall_budget_s(env: Mapping[str, str] | None = None) -> float:
    """Seconds a batch may go without any answer before its unanswered requests fail.

    ``DRIFTLENS_STALL_BUDGET_S`` when set. Otherwise the time one request may take with
    every attempt used (``attempts x timeout`` plus the longest backoff waits between
    them) and one timeout more, capped at :data:`DEFAULT_STALL_BUDGET_S` but never under
    2.5 request timeouts.
    Each attempt's whole time is bounded by the timeout (see
    :class:`llm.openai_backend.OpenAIBackend`), so once that long has passed with no answer
    every request sent first has failed every attempt: the endpoint is stalled, not slow.
    With ``--timeout 5 --max-attempts 2`` a stalled endpoint ends the batch after 15.5 s;
    with the defaults (120 s, 6 attempts) after 300 s. Only answers restart the clock, not
    failures (:func:`llm.batch.arun_chat_batch`).

    Raises:
        ConfigError: the variable is malformed or not positive.
    """
    from llm.retry import RetryPolicy

    source = os.environ if env is None else env
    chosen = _env_number(source, STALL_BUDGET_ENV, float)
    if chosen is not None:
        if not chosen > 0:
            raise ConfigError(f"{STALL_BUDGET_ENV} must be a positive number of seconds.")
        return chosen
    timeout, attempts = current_limits(source)
    policy = RetryPolicy()
    waits = sum(
        min(policy.max_delay_s, policy.base_delay_s * 2 ** (n - 1)) for n in range(1, attempts)
    )
    # one timeout more than a request's worst case: its attempts ended, their results had
    # time to come back on a loaded machine
    one_request = attempts * timeout + waits + timeout
    return max(2.5 * timeout, min(DEFAULT_STALL_BUDGET_S, one_request))
