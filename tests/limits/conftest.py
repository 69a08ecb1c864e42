"""Run the real entry point in-process, as the console script does (errors as one line)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Outcome:
    """Exit status and the two streams of one command."""

    code: int
    out: str
    err: str

    def one_line(self) -> str:
        """The single error line (asserts there is exactly one, and no traceback)."""
        assert self.code != 0, self
        assert "Traceback" not in self.err + self.out, self.err
        lines = [ln for ln in self.err.splitlines() if ln.strip()]
        assert len(lines) == 1, self.err
        return lines[0]


@pytest.fixture
def run_main(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Outcome]:
    """``driftlens ARGS`` through ``app.cli.main`` (the console script's path)."""
    from app.cli import main

    def run(*args: str) -> Outcome:
        monkeypatch.setattr(sys, "argv", ["driftlens", *args])
        monkeypatch.setenv("COLUMNS", "200")
        monkeypatch.delenv("DRIFTLENS_DEBUG", raising=False)
        capsys.readouterr()
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return Outcome(code, out.out, out.err)

    return run
