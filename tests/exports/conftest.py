"""Fixtures for the export tests: a session on the test workspace and a CLI runner."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlmodel import Session
from typer.testing import CliRunner, Result


@pytest.fixture
def session() -> Iterator[Session]:
    """One committing session on the test workspace."""
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings()) as s:
        yield s


@pytest.fixture
def cli() -> Callable[..., Result]:
    """Run ``driftlens ARGS`` in-process."""
    from app.cli.root import build_app

    def run(*args: str) -> Result:
        return CliRunner().invoke(build_app(), list(args), catch_exceptions=True)

    return run
