"""Global CLI options (``--workspace``, ``--db``) and the session opener for commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from sqlmodel import Session

    from storage.settings import Settings


@dataclass(frozen=True)
class CliState:
    """What the root callback parsed; commands read it through :func:`state`."""

    workspace: Path | None
    db_url: str | None


def state(ctx: typer.Context) -> CliState:
    """Return the root options stored on the Click context."""
    root = ctx.find_root()
    obj = root.obj
    if not isinstance(obj, CliState):
        return CliState(workspace=None, db_url=None)
    return obj


def settings(ctx: typer.Context) -> Settings:
    """Resolve workspace settings from options, environment and defaults."""
    from storage.settings import resolve_settings

    st = state(ctx)
    return resolve_settings(workspace=st.workspace, db_url=st.db_url)


@contextmanager
def session_for(ctx: typer.Context, *, migrate: bool = True) -> Iterator[Session]:
    """Open a session on the workspace database (front ends are the only openers)."""
    from storage.workspace import open_workspace_session

    with open_workspace_session(settings(ctx), migrate=migrate) as session:
        yield session
