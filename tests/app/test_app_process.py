"""``driftlens app`` stops its Streamlit server when it is stopped (SIGTERM or SIGINT)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.app.browser_support import app_env, free_port, healthy_within, start_driftlens


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    return [int(x) for x in out.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[-1].split()[0] != "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stopping_driftlens_app_stops_its_streamlit_child(workspace: Path, signum: int) -> None:
    port = free_port()
    proc = start_driftlens("app", "--port", str(port), env=app_env(workspace))
    try:
        assert healthy_within(proc, f"http://127.0.0.1:{port}", 90), "app did not start"
        [child] = _children(proc.pid)
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 0
        deadline = time.monotonic() + 15
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(child), "the Streamlit child outlived driftlens app"
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


_STUBBORN = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


def test_sigterm_stops_serve_even_when_the_server_ignores_it(tmp_path: Path) -> None:
    """Issue 37 item 16: the grace period runs from the signal, then the server is killed.

    The signal used to arrive inside an endless ``wait()``, which resumed endless: a server
    that did not exit on SIGTERM kept ``driftlens app`` (and itself) running.
    """
    driver = (
        "import os, sys\n"
        "from app.cli.app_cmds import serve\n"
        f"sys.exit(serve([sys.executable, '-c', {_STUBBORN!r}], env=dict(os.environ), "
        "grace=1.0))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", driver], stdout=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    children: list[int] = []
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        children = _children(proc.pid)
        (child,) = children
        proc.send_signal(signal.SIGTERM)
        # a bound on a hang, not a timing claim: grace is 1 s
        assert proc.wait(timeout=120) == 0
        deadline = time.monotonic() + 30
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(child)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in children:  # the stubborn server, if the code under test left it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
