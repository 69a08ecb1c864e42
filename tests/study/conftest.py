"""Fixtures for the study tests: a CLI runner and a session on the test workspace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest
from sqlmodel import Session
from typer.testing import CliRunner, Result


@pytest.fixture
def cli() -> Callable[..., Result]:
    """Run ``driftlens ARGS`` in-process; ``result.exception`` holds any error raised."""
    from app.cli.root import build_app

    def run(*args: str) -> Result:
        return CliRunner().invoke(build_app(), list(args), catch_exceptions=True)

    return run


@pytest.fixture
def db() -> Callable[[], AbstractContextManager[Session]]:
    """Open a committing session on the test workspace database."""
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    def opener() -> AbstractContextManager[Session]:
        return open_workspace_session(resolve_settings())

    return opener


@pytest.fixture
def session(db: Callable[[], AbstractContextManager[Session]]) -> Iterator[Session]:
    """One session for the whole test (committed at the end)."""
    with db() as s:
        yield s
