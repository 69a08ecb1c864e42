"""``--timeout`` and ``--max-attempts``: the request limits of commands that call models.

Every command that sends model requests (generate, label, ontology round, judge,
questions filter) takes the same two options; :func:`request_limits` puts them in force
for everything the command builds (see :mod:`llm.limits`, which also reads the
environment equivalents ``DRIFTLENS_REQUEST_TIMEOUT_S`` and ``DRIFTLENS_MAX_ATTEMPTS``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

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
