"""Issue 37: a Label Studio start is waited for while it progresses, not for a fixed time.

A stand-in ``label-studio`` (no real server: mock) migrates for a while, writing its log,
then answers ``/health``; another stays silent. The idle budget here is 2 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from annotation import server
from storage.errors import ServiceError

_FAKE = """#!{python}
import http.server, sys, time
port = int(sys.argv[sys.argv.index("--port") + 1])
for i in range({steps}):
    if {talks}:
        print("migrating", i, flush=True)
    time.sleep(0.5)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def _fake_venv(tmp_path: Path, *, steps: int, talks: bool) -> Path:
    venv = tmp_path / "ls-venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "label-studio"
    script.write_text(_FAKE.format(python=sys.executable, steps=steps, talks=talks))
    script.chmod(0o755)
    return venv


def test_a_slow_start_that_keeps_progressing_is_waited_for_mock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migrating for 6 s with a 2 s idle budget: a fixed 2 s deadline gave up."""
    venv = _fake_venv(tmp_path, steps=12, talks=True)
    monkeypatch.setattr(server, "install", lambda *_a, **_k: venv)
    ws = tmp_path / "ws"
    try:
        state = server.start(ws, port=server_port(), timeout_s=2.0)
        assert server.answers(state.url)
    finally:
        server.stop(ws)


def test_a_start_without_progress_gives_up_after_the_idle_budget_mock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = _fake_venv(tmp_path, steps=60, talks=False)
    monkeypatch.setattr(server, "install", lambda *_a, **_k: venv)
    ws = tmp_path / "ws"
    try:
        with pytest.raises(ServiceError, match="made no progress for 2 s"):
            server.start(ws, port=server_port(), timeout_s=2.0)
    finally:
        server.stop(ws)


def server_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
