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


@contextmanager
def request_limits(timeout: float | None, max_attempts: int | None) -> Iterator[None]:
    """Apply the options to every backend built inside the block."""
    from llm.limits import use_limits

    with use_limits(timeout_s=timeout, max_attempts=max_attempts):
        yield
