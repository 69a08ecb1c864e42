"""Run ``driftlens ARGS`` in-process through the real entry point, as the console script does.

``app.cli.main`` turns every refusal into one line on stderr and an exit status; the
fixtures of several test rooms call it the same way, from here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class CliOutcome:
    """Exit status and the two streams of one command.

    Attributes:
        code: The exit status (0 when ``main`` returned).
        out: What went to stdout.
        err: What went to stderr.
    """

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

    def json(self) -> Any:
        """The standard output parsed as JSON."""
        return json.loads(self.out)


def cli_runner(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *, wide: bool = True
) -> Callable[..., CliOutcome]:
    """A function running ``driftlens ARGS`` through ``app.cli.main``.

    Args:
        capsys: The test's capture, read after each command.
        monkeypatch: Sets ``sys.argv`` (and, with ``wide``, the environment) per command.
        wide: Print as on a 200-column terminal without ``DRIFTLENS_DEBUG`` (so an error
            line is never wrapped, nor a traceback added).

    Returns:
        ``run(*args) -> CliOutcome``.
    """
    from app.cli import main
    from tests.cli_invoke import use_converted_cli

    def run(*args: str) -> CliOutcome:
        monkeypatch.setattr(sys, "argv", ["driftlens", *args])
        use_converted_cli(monkeypatch)  # the application converted once per test process
        if wide:
            monkeypatch.setenv("COLUMNS", "200")
            monkeypatch.delenv("DRIFTLENS_DEBUG", raising=False)
        capsys.readouterr()
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return CliOutcome(code, out.out, out.err)

    return run
