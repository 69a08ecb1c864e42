"""The test suite leaves no process behind: a session-end check of what it started.

Every process the suite starts (``driftlens app`` and its Streamlit child, the simulator
server, chromium, a CLI run, a ``sleep`` holding a lease) is found two ways at the end of
the session:

* it carries the session's marker in its environment: the guard sets
  ``DRIFTLENS_TEST_SESSION`` in ``os.environ`` when the session starts, and every process
  started afterwards inherits it (``dict(os.environ, ...)`` keeps it too), so it is found
  even after its parent died and it was re-parented to init (the case a server started in
  a new session, whose launcher was killed, falls into);
* or it is still a descendant of the pytest process (an environment built from scratch
  carries no marker).

The servers started *before* pytest (``scripts/ci/postgres.sh``, ``labelstudio.sh``,
``vllm.sh``) carry neither and are left alone. Survivors are reported by pid and command
line, then killed, and the session fails (exit status 1), checked in
``pytest_sessionfinish``, after every fixture, session-scoped ones included, was torn down.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

MARKER = "DRIFTLENS_TEST_SESSION"

#: Helpers that live exactly as long as the interpreter that started them (not servers).
INTERPRETER_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")

#: How long survivors get to finish exiting (a server stopped just before may be closing).
GRACE_S = 10.0

PROC = Path("/proc")


@dataclass(frozen=True)
class Survivor:
    """A live process the suite started."""

    pid: int
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid}: {self.command}"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # gone meanwhile, or not ours to read
        return b""


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or ``None`` when it is gone."""
    raw = _read(PROC / str(pid) / "stat").decode(errors="replace")
    if not raw:
        return None
    fields = raw.rsplit(")", 1)[-1].split()
    return fields[0], int(fields[1])


def _command(pid: int) -> str:
    raw = _read(PROC / str(pid) / "cmdline")
    return raw.replace(b"\0", b" ").decode(errors="replace").strip() or f"[{pid}]"


def _pids() -> list[int]:
    return [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]


def _ancestors(pid: int) -> set[int]:
    seen = {pid}
    while (stat := _stat(pid)) is not None and stat[1] > 1 and stat[1] not in seen:
        pid = stat[1]
        seen.add(pid)
    return seen


def survivors(marker: str, *, root: int | None = None) -> list[Survivor]:
    """Live processes carrying ``MARKER=marker`` or descending from ``root`` (this process).

    Zombies (exited, not yet reaped) hold nothing and are skipped, as are this process and
    its ancestors and the interpreter helpers of :data:`INTERPRETER_HELPERS`.
    """
    root = os.getpid() if root is None else root
    mine = _ancestors(root)
    tag = f"{MARKER}={marker}".encode()
    parents: dict[int, int] = {}
    found: list[Survivor] = []
    candidates = []
    for pid in _pids():
        stat = _stat(pid)
        if stat is None or stat[0] == "Z" or pid in mine:
            continue
        parents[pid] = stat[1]
        candidates.append(pid)
    for pid in candidates:
        tagged = tag in _read(PROC / str(pid) / "environ").split(b"\0")
        ancestor, hops = parents.get(pid), 0
        while ancestor is not None and ancestor != root and hops < 64:
            ancestor, hops = parents.get(ancestor), hops + 1
        if not (tagged or ancestor == root):
            continue
        command = _command(pid)
        if any(helper in command for helper in INTERPRETER_HELPERS):
            continue
        found.append(Survivor(pid, command))
    return found


def settle(marker: str, *, grace_s: float | None = None) -> list[Survivor]:
    """The survivors still there after up to ``grace_s`` (default :data:`GRACE_S`) seconds."""
    deadline = time.monotonic() + (GRACE_S if grace_s is None else grace_s)
    while (left := survivors(marker)) and time.monotonic() < deadline:
        time.sleep(0.25)
    return left


def kill(found: list[Survivor]) -> None:
    """SIGKILL each survivor (they were reported first)."""
    for s in found:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(s.pid, signal.SIGKILL)


_MARKER_KEY = pytest.StashKey[str]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Mark every process the session will start (they inherit ``os.environ``)."""
    marker = uuid.uuid4().hex
    os.environ[MARKER] = marker
    session.config.stash[_MARKER_KEY] = marker


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every fixture was torn down: fail the session if a started process survives."""
    marker = session.config.stash.get(_MARKER_KEY, None)
    if marker is None or not PROC.is_dir():  # no /proc (not Linux): nothing to check with
        return
    left = settle(marker)
    kill(left)
    if not left:
        return
    lines = "\n".join(f"  {s}" for s in left)
    message = (
        f"{len(left)} process(es) started by the test suite were still running after the "
        f"test session (now killed); the fixture or test that started them must stop them "
        f"and their children:\n{lines}"
    )
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
