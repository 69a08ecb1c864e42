"""Turn exceptions into one clear line for the CLI user.

Every expected failure ends as exactly one line on stderr (``error: <sentence>``) and a
non-zero exit status; only a bug (or ``--debug``) shows a traceback.

Click's exception classes come in two families: the ``click`` package's and, from typer
0.2x on, the copy typer bundles (``typer._click.exceptions``) which does *not* subclass
``click.ClickException``. :func:`click_classes` gathers both, so usage errors read the
same whatever the installed typer is.

User text in a message (file names, run names, cells) is printed literally: the console
has markup off and escapes control characters (:mod:`app.cli.console`).
"""

from __future__ import annotations

import shlex
import sys
import traceback
from collections.abc import Sequence
from functools import cache
from types import ModuleType

import click
from rich.text import Text

from app.cli.console import err_console
from storage.safe_text import escape_control, redact_secrets

_err = err_console(soft_wrap=True)

#: Exit status of an interrupted command (128 + SIGINT), as shells report it.
INTERRUPTED_EXIT = 130


def _exception_modules() -> list[ModuleType]:
    modules: list[ModuleType] = [click.exceptions]
    try:  # typer >= 0.2x raises its bundled copy of click's classes
        from typer._click import exceptions as bundled
    except ImportError:  # older typer: plain click only
        return modules
    if bundled is not click.exceptions:
        modules.append(bundled)
    return modules


@cache
def click_classes(name: str) -> tuple[type[BaseException], ...]:
    """Click's exception class ``name`` from plain click and typer's bundled copy.

    Args:
        name: ``ClickException``, ``UsageError``, ``Abort`` or ``Exit``.
    """
    found = [getattr(m, name) for m in _exception_modules() if hasattr(m, name)]
    return tuple(dict.fromkeys(found))


def _help_hint(exc: BaseException) -> str:
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) if ctx is not None else None
    return f" (see: {path} --help)" if path else " (see: driftlens --help)"


def resume_hint(argv: Sequence[str] | None = None) -> str:
    """The interrupted command line, quoted for a shell, to run again to resume."""
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["driftlens", *args])


def interrupted_message(argv: Sequence[str] | None = None) -> str:
    """What the user reads after Ctrl-C: what was kept and how to resume."""
    return (
        "Interrupted: everything already stored (answers, labels, scores, imports) is kept; "
        f"run `{resume_hint(argv)}` again to resume where it stopped."
    )


def _sentence(text: str) -> str:
    """One line: runs of whitespace become one space (newlines included)."""
    return " ".join(text.split())


def user_message(exc: BaseException) -> tuple[str, int] | None:
    """Return ``(message, exit_code)`` for an expected error, ``None`` for a bug.

    Expected errors are our ``DriftLensError`` family, ``ValueError`` raised on
    invalid input, missing files, Click usage errors (either family) and Ctrl-C.
    """
    from storage.errors import DriftLensError

    if isinstance(exc, (*click_classes("Abort"), KeyboardInterrupt)):
        return interrupted_message(), INTERRUPTED_EXIT
    if isinstance(exc, click_classes("Exit")):
        code = int(getattr(exc, "exit_code", 0) or 0)
        return None if code else ("", 0)
    if isinstance(exc, click_classes("UsageError")):
        message = _sentence(exc.format_message())  # type: ignore[attr-defined]
        return message.rstrip(".") + "." + _help_hint(exc), int(exc.exit_code)  # type: ignore[attr-defined]
    if isinstance(exc, click_classes("ClickException")):
        return _sentence(exc.format_message()), int(exc.exit_code)  # type: ignore[attr-defined]
    if isinstance(exc, DriftLensError):
        return _sentence(str(exc)), exc.exit_code
    if isinstance(exc, FileNotFoundError):
        name = exc.filename or str(exc)
        return f"File not found: {name}", 2
    if isinstance(exc, UnicodeDecodeError):
        return f"Not UTF-8 text ({exc.reason} at byte {exc.start}).", 2
    if isinstance(exc, ValueError):
        return _sentence(f"Invalid input: {exc}"), 2
    return None


def error_line(message: str, *, prefix: str = "error: ") -> Text:
    """The printed error: ``error:`` in red, then the message literally.

    Control characters are escaped and secrets in URLs redacted; nothing in the message
    is read as Rich markup.
    """
    line = Text(prefix, style="bold red")
    line.append(escape_control(redact_secrets(message)))
    return line


def report_interrupted() -> None:
    """Print the Ctrl-C message (:func:`interrupted_message`) on stderr."""
    _err.print(error_line(interrupted_message(), prefix=""))


def report_user_error(exc: BaseException, *, debug: bool) -> int:
    """Print the error the way a user should see it and return the exit code."""
    if isinstance(exc, click_classes("Exit")):
        return int(getattr(exc, "exit_code", 0) or 0)
    found = user_message(exc)
    if debug or found is None:
        traceback.print_exception(exc, file=sys.stderr)
        return found[1] if found else 1
    message, code = found
    if message:
        _err.print(error_line(message, prefix="" if code == INTERRUPTED_EXIT else "error: "))
    return code
