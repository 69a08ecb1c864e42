"""Exit status 3 with the cause when a command's model requests failed (one rule for all)."""

from __future__ import annotations

import typer

from app.cli.console import err_console
from study.request_failures import FAILED_REQUESTS_EXIT, RequestFailures

_err = err_console(soft_wrap=True)


def exit_if_failed(failures: RequestFailures) -> None:
    """Print why requests failed and exit 3; return quietly when none did.

    Raises:
        typer.Exit: with status 3 when ``failures.failed`` > 0.
    """
    if failures.failed <= 0:
        return
    _err.print(failures.advice(), markup=False)
    raise typer.Exit(FAILED_REQUESTS_EXIT)
