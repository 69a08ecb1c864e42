"""A command group of the CLI: its Typer application and the ``register`` root.py calls.

A command module names its group once (``conflicts_app, register = command_group(...)``)
instead of building the Typer application and writing a ``register`` function that adds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import typer

Register = Callable[[typer.Typer], None]


def command_group(
    name: str, help: str, commands: Mapping[str, Callable[..., Any]] | None = None
) -> tuple[typer.Typer, Register]:
    """A group ``driftlens NAME …`` and the function that adds it to the root application.

    Args:
        name: The group's name on the command line.
        help: Its one-line help.
        commands: Subcommands to add now, by name (the rest are added with
            ``@group.command(...)``).

    Returns:
        The group's Typer application and its ``register(app)``.
    """
    group = typer.Typer(name=name, help=help, no_args_is_help=True)
    for command, function in (commands or {}).items():
        group.command(command)(function)

    def register(app: typer.Typer) -> None:
        app.add_typer(group, name=name)

    register.__doc__ = f"Add the ``{name}`` group to the root application."
    return group, register
