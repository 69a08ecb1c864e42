"""Suite-wide fixtures: every test gets its own workspace; nothing touches ./driftlens-workspace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# The session fails when a process the suite started is still running at its end.
from tests.process_guard import _no_process_outlives_the_session  # noqa: F401

if TYPE_CHECKING:
    from sqlmodel import Session
    from typer.testing import Result


@pytest.fixture(autouse=True)
def _isolated_workspace(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point the workspace and database at a fresh temporary folder for each test."""
    ws = tmp_path_factory.mktemp("workspace")
    monkeypatch.setenv("DRIFTLENS_WORKSPACE", str(ws))
    monkeypatch.delenv("DRIFTLENS_DB_URL", raising=False)
    return ws


@pytest.fixture
def workspace(_isolated_workspace: Path) -> Path:
    """The test's workspace folder (already set in ``DRIFTLENS_WORKSPACE``)."""
    return _isolated_workspace


@pytest.fixture
def cli() -> Callable[..., Result]:
    """Run ``driftlens ARGS`` in-process; ``result.exception`` holds any error raised."""
    from typer.testing import CliRunner

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
    """One committing session on the test workspace for the whole test."""
    with db() as s:
        yield s


@pytest.fixture(scope="session")
def demo_workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Run ``driftlens demo`` once per test session (the real console script).

    Returns the workspace folder and what the demo printed. B is lowered to keep the
    suite quick; everything else is the demo exactly as a newcomer runs it.
    """
    import os
    import subprocess
    import sys

    ws = tmp_path_factory.mktemp("demo-ws")
    env = dict(os.environ, DRIFTLENS_WORKSPACE=str(ws), COLUMNS="200")
    env.pop("DRIFTLENS_DB_URL", None)
    done = subprocess.run(
        [str(Path(sys.executable).with_name("driftlens")), "demo", "--bootstrap", "2000"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return ws, done.stdout
