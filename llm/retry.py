"""Retry policy: which failures are retried, how long to wait, and the one-line messages."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# Error kinds put in ``ChatResult.error_kind``. The first four mean "this endpoint will
# refuse every request", so the batch runner turns a batch made only of them into one
# ServiceError instead of N identical per-request errors.
FATAL_KINDS: frozenset[str] = frozenset({"auth", "model", "url", "unreachable"})
RETRYABLE_STATUS: frozenset[int] = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How a backend retries transient failures.

    Attributes:
        max_attempts: Attempts per request, the first one included (1 = no retries).
        base_delay_s: Backoff base; attempt ``n`` waits up to ``base * 2**(n-1)``.
        max_delay_s: Cap of the exponential backoff (not of ``Retry-After``).
        max_retry_after_s: A ``Retry-After`` longer than this is treated as a refusal,
            because waiting minutes inside a batch helps nobody.
    """

    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry delays must be non-negative")


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Parse a ``Retry-After`` header (delta seconds or HTTP-date) into seconds.

    Args:
        value: The header value, or ``None``.
        now: The current time for HTTP-dates (default: now, UTC).

    Returns:
        Seconds to wait (never negative), or ``None`` when absent or unparseable.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def backoff_delay(
    attempt: int, policy: RetryPolicy, rng: random.Random, retry_after: float | None = None
) -> float:
    """Return the wait before the next attempt: full jitter, at least ``Retry-After``.

    Full jitter (uniform in ``[0, min(cap, base * 2**(attempt-1))]``) spreads the retries
    of a whole batch that failed together instead of sending them back in lock-step.

    Args:
        attempt: The attempt that just failed (1-based).
        policy: The retry policy.
        rng: Random source of the jitter.
        retry_after: Seconds the server asked us to wait, if any.
    """
    ceiling = min(policy.max_delay_s, policy.base_delay_s * (2 ** (attempt - 1)))
    delay = rng.uniform(0.0, ceiling)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay
