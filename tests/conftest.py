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
