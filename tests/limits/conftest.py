"""Run the real entry point in-process, as the console script does (errors as one line)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.cli_runner import CliOutcome, cli_runner

# The outcome type under the name this room's tests import.
Outcome = CliOutcome


@pytest.fixture
def run_main(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Outcome]:
    """``driftlens ARGS`` through ``app.cli.main`` (the console script's path)."""
    return cli_runner(capsys, monkeypatch)
