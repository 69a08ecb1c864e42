"""Turn exceptions into one clear line for the CLI user."""

from __future__ import annotations

import sys
import traceback

import click
from rich.console import Console

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def user_message(exc: BaseException) -> tuple[str, int] | None:
    """Return ``(message, exit_code)`` for an expected error, ``None`` for a bug.

    Expected errors are our ``DriftLensError`` family, ``ValueError`` raised on
    invalid input, missing files and Click usage errors.
    """
    from storage.errors import DriftLensError

    if isinstance(exc, click.exceptions.Abort | KeyboardInterrupt):
        return (
            "Interrupted; everything already stored is kept. Run the same command to resume.",
            130,
        )
    if isinstance(exc, click.exceptions.Exit):
        return None if exc.exit_code else ("", 0)
    if isinstance(exc, click.ClickException):
        return exc.format_message(), exc.exit_code
    if isinstance(exc, DriftLensError):
        return str(exc), exc.exit_code
    if isinstance(exc, FileNotFoundError):
        name = exc.filename or str(exc)
        return f"File not found: {name}", 2
    if isinstance(exc, ValueError):
        return f"Invalid input: {exc}", 2
    return None


def report_user_error(exc: BaseException, *, debug: bool) -> int:
    """Print the error the way a user should see it and return the exit code."""
    if isinstance(exc, click.exceptions.Exit):
        return int(exc.exit_code)
    if isinstance(exc, click.ClickException) and not debug:
        exc.show()
        return exc.exit_code
    found = user_message(exc)
    if debug or found is None:
        traceback.print_exception(exc, file=sys.stderr)
        return found[1] if found else 1
    message, code = found
    if message:
        _err.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    return code
