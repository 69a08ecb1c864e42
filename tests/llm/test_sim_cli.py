"""The ``sim`` CLI group and the simulator server as its own process."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import httpx
import typer
from typer.testing import CliRunner

from app.cli.sim_cmds import register
from llm.sim.registry import all_presets


def sim_cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """Test root."""

    register(app)
    return app


def test_presets_table_and_json() -> None:
    runner = CliRunner()
    table = runner.invoke(sim_cli(), ["sim", "presets"])
    assert table.exit_code == 0, table.output
    assert "sim/default" in table.output and "sim/null" in table.output
    as_json = runner.invoke(sim_cli(), ["sim", "presets", "--json"])
    data = json.loads(as_json.output)
    # Every registered preset is listed; the drift presets are always among them.
    assert set(data) == set(all_presets()) and {"default", "null", "strong"} <= set(data)
    assert data["null"]["class_doses"] == {"noise": 0.0, "attribute": 0.0, "life_event": 0.0}


def test_serve_rejects_an_unknown_preset() -> None:
    result = CliRunner().invoke(sim_cli(), ["sim", "serve", "--preset", "huge"])
    assert result.exit_code != 0
    assert "Unknown simulator preset 'huge'" in str(result.exception)


def test_server_module_runs_as_a_process() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm.sim.server", "--port", str(port), "--api-key", "k"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"{url}/models", headers={"Authorization": "Bearer k"})
                break
            except httpx.ConnectError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        assert r.status_code == 200
        body = {"model": "sim", "messages": [{"role": "user", "content": "Rent or buy?"}]}
        r = httpx.post(f"{url}/chat/completions", json=body, headers={"Authorization": "Bearer k"})
        assert r.status_code == 200 and r.json()["model"] == "sim/default"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_busy_port_is_a_one_line_config_error() -> None:
    import pytest

    from llm.sim.server import bind_socket
    from storage.errors import ConfigError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"Cannot listen on 127.0.0.1:{port} .*--port"):
            bind_socket("127.0.0.1", port)
