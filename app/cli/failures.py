"""What a command says when some of its model requests failed: exit status 3 with the cause
(one rule for all), or the advice to run it again."""

from __future__ import annotations

import typer
from rich.console import Console

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


def retry_hint(console: Console, failed: int) -> None:
    """Advise running the command again when ``failed`` requests failed (what was stored is
    kept, so the rerun asks only the failed ones); say nothing when none did."""
    if failed:
        console.print("Run the command again to retry the failed requests.", markup=False)
