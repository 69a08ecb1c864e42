"""Suite-wide fixtures: every test gets its own workspace; nothing touches ./driftlens-workspace."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.background import Background, background, selected_use

# The session fails when a process the suite started is still running at its end.
from tests.process_guard import pytest_sessionfinish, pytest_sessionstart  # noqa: F401

# Property tests check results, not speed: on a loaded machine Hypothesis' per-example
# deadline and its too-slow health check failed tests whose examples were all correct
# (tests/llm/test_logprobs.py at load 12). Timing belongs in bench/.
hypothesis_settings.register_profile(
    "driftlens", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("driftlens")

# The suite's tests predate structured outputs (issue 36) and exercise prompt-and-repair
# with the simulator's malformed replies: they run with structured outputs off unless the
# environment says otherwise; tests of structured outputs set the mode they test
# (llm.structured.use_structured, or DRIFTLENS_STRUCTURED through monkeypatch).
os.environ.setdefault("DRIFTLENS_STRUCTURED", "off")

if TYPE_CHECKING:
    from sqlmodel import Session
    from typer.testing import Result

#: Fixtures that wait for a command started with the session (``tests/background.py``).
PRESTARTED = ("ray_report",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules whose tests wait for a prestarted command last, in collected order.

    The Ray scenario takes minutes; run last, its tests find it finished instead of
    waiting for it while the cores the scenario could use sit idle. Whole modules move, and
    the sort is stable, so a module stays in one piece (its module-scoped fixtures start
    once) even where only some of its tests wait.
    """
    waiting = {
        item.path
        for item in items
        if any(f in getattr(item, "fixturenames", ()) for f in PRESTARTED)
    }
    items.sort(key=lambda item: item.path in waiting)


@pytest.fixture(autouse=True)
def _fresh_structured_support() -> Iterator[None]:
    """Each test starts with no endpoint's structured-output support remembered."""
    from llm.structured import SUPPORT

    SUPPORT.clear()
    yield
    SUPPORT.clear()


@pytest.fixture(scope="session")
def _migrated_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite database migrated to head once per test process, copied into each workspace.

    Bringing a fresh database through every Alembic revision costs a third of a second;
    paid by every test that opens its workspace, it was minutes of the suite. A copy of a
    migrated file is the same database (the revisions themselves are tested from empty in
    tests/storage), and the workspace still checks it is at head when it opens it.
    """
    from storage.migrate import upgrade
    from storage.settings import DB_FILENAME

    path = tmp_path_factory.mktemp("migrated") / DB_FILENAME
    upgrade(f"sqlite:///{path}")
    # fold the write-ahead log into the file, so that copying the file copies the database
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


@pytest.fixture(autouse=True)
def _isolated_workspace(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    _migrated_database: Path,
) -> Path:
    """Point the workspace and database at a fresh temporary folder for each test.

    The folder starts with an empty database already at the newest schema.
    """
    ws = tmp_path_factory.mktemp("workspace")
    shutil.copyfile(_migrated_database, ws / _migrated_database.name)
    monkeypatch.setenv("DRIFTLENS_WORKSPACE", str(ws))
    monkeypatch.delenv("DRIFTLENS_DB_URL", raising=False)
    return ws


@pytest.fixture
def workspace(_isolated_workspace: Path) -> Path:
    """The test's workspace folder (already set in ``DRIFTLENS_WORKSPACE``)."""
    return _isolated_workspace


@pytest.fixture
def cli() -> Callable[..., Result]:
    """Run ``driftlens ARGS`` in-process; ``result.exception`` holds any error raised.

    The application is converted to its click command once per test process
    (``tests/cli_invoke.py``).
    """
    from tests.cli_invoke import invoke_cli

    def run(*args: str) -> Result:
        return invoke_cli(args, catch_exceptions=True)

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


@pytest.fixture(scope="session", autouse=True)
def _demo_prestart(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, Background] | None]:
    """Start ``driftlens demo`` when the session begins, if a selected test needs it.

    The demo is a minute or two of CPU in its own processes: started first, it runs while
    the modules before the first demo test run, and it no longer counts against one test's
    time limit (on a loaded machine it once passed the 600 s limit inside a fixture).
    """
    if not selected_use(request, "demo_workspace"):
        yield None
        return
    root = tmp_path_factory.mktemp("demo")
    ws = root / "ws"
    ws.mkdir()
    env = dict(os.environ, DRIFTLENS_WORKSPACE=str(ws), COLUMNS="200")
    env.pop("DRIFTLENS_DB_URL", None)
    argv = [str(Path(sys.executable).with_name("driftlens")), "demo", "--bootstrap", "2000"]
    with background(argv, root, env) as demo:  # its simulator servers go with its group
        yield ws, demo


@pytest.fixture(scope="session", autouse=True)
def _ray_prestart(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, Background] | None]:
    """Start the Ray cluster scenario when the session begins, if a selected test reads it.

    It is two to three minutes of one process tree (a Ray head, PostgreSQL, simulators);
    at a lower priority it runs on the core the tests before it leave idle. Where the Ray
    tests cannot run here, ``ray_report`` says why (skip, or fail under CI).
    """
    from tests.cluster.ray_scenario import NETNS, SCENARIO, ray_missing

    if not selected_use(request, "ray_report") or ray_missing() is not None:
        yield None
        return
    root = tmp_path_factory.mktemp("ray")
    out = root / "report.json"
    with background(
        [*NETNS, sys.executable, str(SCENARIO), str(out)], root, os.environ, nice=10
    ) as run:
        yield out, run


@pytest.fixture(scope="session")
def demo_workspace(_demo_prestart: tuple[Path, Background] | None) -> tuple[Path, str]:
    """The workspace of ``driftlens demo`` run once per test session (the real console script).

    Returns the workspace folder and what the demo printed. B is lowered to keep the
    suite quick; everything else is the demo exactly as a newcomer runs it. The run starts
    when the session does (``_demo_prestart``); this waits for it.
    """
    assert _demo_prestart is not None, "demo_workspace is requested, so the demo was started"
    ws, demo = _demo_prestart
    return ws, demo.finish("driftlens demo", timeout_s=900)
