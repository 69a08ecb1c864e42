"""Commands the suite starts when its session begins and a fixture waits for later.

A few fixtures are minutes of work in their own processes (the demo build, the Ray
cluster scenario). Started with the session, they run while the modules before their
first user run, and their time no longer counts against one test's limit. A started
command writes to files (a full pipe would block it) and runs in its own process group,
so everything it started goes with it when it is stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Background:
    """A command started in the background.

    Attributes:
        proc: Its process (the leader of its own process group).
        out: The file its standard output goes to.
        err: The file its standard error goes to.
    """

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def finish(self, what: str, timeout_s: float) -> str:
        """Wait for the command and return its standard output; fail the test if it did
        not finish within ``timeout_s`` or exited non-zero (with the tail of both files)."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"{what} did not finish within {timeout_s:.0f} s")
        stdout = self.out.read_text(encoding="utf-8", errors="replace")
        stderr = self.err.read_text(encoding="utf-8", errors="replace")
        assert self.proc.returncode == 0, f"{what} failed:\n{stdout[-4000:]}{stderr[-4000:]}"
        return stdout

    def stop(self) -> None:
        """Kill the command's process group if it is still running."""
        if self.proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@contextmanager
def background(
    argv: Sequence[str], folder: Path, env: Mapping[str, str], *, nice: int = 0
) -> Iterator[Background]:
    """Start ``argv`` with its output in ``folder``; stop it (and its group) on exit.

    Args:
        argv: The command.
        folder: Where ``stdout.txt`` and ``stderr.txt`` go.
        env: Its environment.
        nice: How much lower its priority is than the suite's, so that it takes the cores
            the running tests leave idle rather than slowing them.
    """
    out, err = folder / "stdout.txt", folder / "stderr.txt"
    with out.open("wb") as fo, err.open("wb") as fe:
        proc = subprocess.Popen(
            ["nice", "-n", str(nice), *argv] if nice else list(argv),
            env=dict(env),
            stdout=fo,
            stderr=fe,
            start_new_session=True,
        )
    started = Background(proc, out, err)
    try:
        yield started
    finally:
        started.stop()


def selected_use(request: pytest.FixtureRequest, fixture: str) -> bool:
    """Whether any test selected in this session uses ``fixture``."""
    return any(fixture in getattr(i, "fixturenames", ()) for i in request.session.items)
