"""Suite-wide fixtures: every test gets its own workspace; nothing touches ./driftlens-workspace."""

from __future__ import annotations

from pathlib import Path

import pytest


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
