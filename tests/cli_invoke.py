"""In-process ``driftlens`` calls with the CLI converted to its click command once.

``typer.testing.CliRunner.invoke`` converts the Typer application it is given to a click
command on every call, and so does ``Typer.__call__``: inside the suite's pytest process
about half a second of CPU each for the whole ``driftlens`` tree (192 conversions were
108 s of user CPU in nine CLI-heavy modules; docs/performance.md, "Second pass"), paid by
each of the suite's in-process CLI calls. The converted command keeps no state between
calls (each call parses its options into a new context and reads environment variables
then), so :func:`converted_cli` converts :func:`app.cli.root.build_app`'s application once
per test process, and every way in reuses it: :func:`invoke_cli` (the ``cli`` fixture),
``CliRunner().invoke`` of that application, and ``app.cli.main`` (the console script's
entry, ``tests/cli_runner.py``) after :func:`use_converted_cli`. Any other application is
converted as before.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest
import typer.main
import typer.testing
from typer.testing import CliRunner, Result

if TYPE_CHECKING:
    from typer import Typer
    from typer._click import Command


_convert = typer.main.get_command


@functools.cache
def converted_cli() -> tuple[Typer, Command]:
    """The ``driftlens`` application, built once, and its click command."""
    from app.cli.root import build_app

    app = build_app()
    return app, _convert(app)


def _get_command(typer_instance: Typer) -> Command:
    """Typer's conversion, answered from the cache for :func:`converted_cli`'s app."""
    cached, command = converted_cli()
    return command if typer_instance is cached else _convert(typer_instance)


# CliRunner.invoke and Typer.__call__ look the conversion up in their modules on each call:
# replaced once, for the whole process (an identity check: other applications unaffected)
typer.testing._get_command = _get_command
typer.main.get_command = _get_command


def use_converted_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``app.cli.main`` (which builds the application) run the converted one."""
    app, _ = converted_cli()  # built before the patch: converted_cli calls the real build_app
    monkeypatch.setattr("app.cli.root.build_app", lambda: app)


def invoke_cli(args: Sequence[str], **kwargs: Any) -> Result:
    """Run ``driftlens ARGS`` in-process with ``CliRunner().invoke``'s keyword arguments."""
    app, _ = converted_cli()
    return CliRunner().invoke(app, list(args), **kwargs)
