"""The session-end process check finds what the suite left running, and can fail a session."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

from tests.process_guard import MARKER, kill, survivors

ROOT = Path(__file__).resolve().parents[1]


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return True
        time.sleep(0.1)
    return False


def test_an_orphaned_server_is_found_by_its_marker_and_killed() -> None:
    marker = uuid.uuid4().hex
    env = dict(os.environ, **{MARKER: marker})
    # The launcher exits at once; its sleep is re-parented away from this process (as a
    # server whose launcher died), so only the marker in its environment finds it.
    out = subprocess.run(
        ["sh", "-c", "sleep 120 >/dev/null 2>&1 & echo $!"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        start_new_session=True,
    )
    orphan = int(out.stdout.strip())
    try:
        found = survivors(marker)
        assert [s.pid for s in found] == [orphan]
        assert "sleep 120" in found[0].command
        # Not a descendant any more: another session's marker does not find it.
        assert orphan not in [s.pid for s in survivors(uuid.uuid4().hex)]
    finally:
        kill(survivors(marker))
    assert _gone(orphan)
    assert survivors(marker) == []


def test_a_child_started_without_the_marker_is_found_as_a_descendant() -> None:
    marker = uuid.uuid4().hex
    child = subprocess.Popen(["sleep", "120"], env={"PATH": os.environ.get("PATH", "")})
    try:
        assert child.pid in [s.pid for s in survivors(marker)]
    finally:
        child.kill()
        child.wait()
    assert child.pid not in [s.pid for s in survivors(marker)]  # reaped: nothing left


CONFTEST = """
import tests.process_guard as guard

guard.GRACE_S = 0.5
from tests.process_guard import pytest_sessionfinish, pytest_sessionstart  # noqa: F401,E402
"""

LEAKING = """
import subprocess
from pathlib import Path


def test_starts_a_server_and_forgets_it():
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    Path("leaked.pid").write_text(str(proc.pid))
"""

CLEAN = """
import subprocess


def test_starts_a_server_and_stops_it():
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    proc.terminate()
    proc.wait()
"""


def _session(tmp_path: Path, test: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(test))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_session_that_leaves_a_server_running_fails_and_the_server_is_killed(
    tmp_path: Path,
) -> None:
    done = _session(tmp_path, LEAKING)
    assert done.returncode != 0, done.stdout
    assert "1 passed" in done.stdout, done.stdout
    assert "still running after the test session" in done.stdout
    leaked = int((tmp_path / "leaked.pid").read_text())
    assert f"pid {leaked}: sleep 120" in done.stdout
    assert _gone(leaked)


def test_a_session_that_stops_what_it_started_passes(tmp_path: Path) -> None:
    done = _session(tmp_path, CLEAN)
    assert done.returncode == 0, done.stdout + done.stderr
