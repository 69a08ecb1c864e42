"""``--timeout`` and ``--max-attempts``: the request limits of commands that call models.

Every command that sends model requests (generate, label, ontology round, judge,
questions filter) takes the same two options; :func:`request_limits` puts them in force
for everything the command builds (see :mod:`llm.limits`, which also reads the
environment equivalents ``DRIFTLENS_REQUEST_TIMEOUT_S`` and ``DRIFTLENS_MAX_ATTEMPTS``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from study.limits import Bound

TIMEOUT_OPTION = typer.Option(
    None,
    "--timeout",
    help="Seconds one model request may take before it is retried "
    "(env DRIFTLENS_REQUEST_TIMEOUT_S; default 120).",
)
MAX_ATTEMPTS_OPTION = typer.Option(
    None,
    "--max-attempts",
    help="Attempts per model request, the first included (env DRIFTLENS_MAX_ATTEMPTS; default 6).",
)


LABELER_MAX_TOKENS_OPTION = typer.Option(
    None,
    "--max-tokens",
    help="Token budget of one LLM-labeler request (env DRIFTLENS_LABELER_MAX_TOKENS; "
    "default 1536).",
)
JUDGE_MAX_TOKENS_OPTION = typer.Option(
    None,
    "--max-tokens",
    help="Token budget of one request (env DRIFTLENS_JUDGE_MAX_TOKENS; default 512 for "
    "judges, 256 for the question filter).",
)
LABEL_CONCURRENCY_OPTION = typer.Option(
    None,
    "--concurrency",
    help="LLM-labeler requests in flight (env DRIFTLENS_LABEL_CONCURRENCY; default 16).",
)


@contextmanager
def request_limits(
    timeout: float | None,
    max_attempts: int | None,
    *,
    labeler_max_tokens: int | None = None,
    judge_max_tokens: int | None = None,
    label_concurrency: int | None = None,
) -> Iterator[None]:
    """Apply the options to every backend and classifier built inside the block."""
    from llm.limits import use_limits

    with use_limits(
        timeout_s=timeout,
        max_attempts=max_attempts,
        labeler_max_tokens=labeler_max_tokens,
        judge_max_tokens=judge_max_tokens,
        label_concurrency=label_concurrency,
    ):
        yield


def bootstrap_option(default: int, *, short: bool = True, help: str | None = None) -> Any:
    """The ``--bootstrap`` option of every command that resamples: one bound for all.

    The range is :data:`study.limits.BOOTSTRAP`'s, checked while the command line is parsed
    (before a table is read or a run is stored).
    """
    from study.limits import BOOTSTRAP

    flags = ("--bootstrap", "-B") if short else ("--bootstrap",)
    return typer.Option(
        default,
        *flags,
        min=int(BOOTSTRAP.low),
        max=int(BOOTSTRAP.high),
        help=(help or "Bootstrap replicates")
        + f" ({int(BOOTSTRAP.low)}..{int(BOOTSTRAP.high):,}).",
    )


def bounded_option(default: Any, *flags: str, bound: Bound, help: str) -> Any:
    """A numeric option whose range is one of :mod:`study.limits`' bounds."""
    return typer.Option(default, *flags, min=bound.low, max=bound.high, help=help)
