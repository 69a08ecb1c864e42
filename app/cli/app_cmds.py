"""``driftlens app``: start the Streamlit workbench on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

import typer

from app.cli.context import settings


def register(app: typer.Typer) -> None:
    """Add ``app`` to the root application."""
    app.command("app")(app_cmd)


def streamlit_command(*, host: str, port: int) -> list[str]:
    """The command line that serves the workbench (also used by the browser tests)."""
    # Not app/streamlit_app.py: its folder holds pages/, see app/ui/serve_main.py.
    script = Path(__file__).resolve().parents[1] / "ui" / "serve_main.py"
    # app.ui.serve_process is ``python -m streamlit`` that starts the pages' imports first.
    return [
        sys.executable,
        "-m",
        "app.ui.serve_process",
        "run",
        str(script),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--global.developmentMode",
        "false",
        "--client.toolbarMode",
        "minimal",
    ]


def app_cmd(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
    port: int = typer.Option(8501, "--port", help="Port to serve on."),
) -> None:
    """Open the browser workbench on this workspace (Ctrl-C stops it)."""
    from storage.workspace import init_workspace

    conf = settings(ctx)
    init_workspace(conf)
    env = dict(os.environ, DRIFTLENS_WORKSPACE=str(conf.workspace), DRIFTLENS_DB_URL=conf.db_url)
    typer.echo(f"DriftLens Workbench on http://{host}:{port} (workspace {conf.workspace})")
    raise typer.Exit(serve(streamlit_command(host=host, port=port), env=env))


#: How often ``serve`` looks whether it was asked to stop while the server runs.
_POLL_S = 0.5


def serve(command: list[str], *, env: dict[str, str], grace: float = 10.0) -> int:
    """Run the Streamlit server as a child that stops when this process is stopped.

    SIGTERM and SIGINT sent to ``driftlens app`` are passed on to the server, which gets
    ``grace`` seconds to exit before it is killed: stopping the app never leaves a server
    holding the port.

    Returns:
        The server's exit status (0 when it was stopped by a signal we passed on).
    """
    child = subprocess.Popen(command, env=env)
    stopping: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    deadline: float | None = None
    try:
        while True:
            # Short waits, not one endless one: a signal arriving during ``wait()`` runs
            # ``forward`` and the wait resumes with the timeout it started with, so an
            # endless wait ignored the grace period and a server slow to honour SIGTERM
            # kept ``driftlens app`` running.
            if stopping and deadline is None:
                deadline = time.monotonic() + grace
            try:
                code = child.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    child.kill()
    finally:
        if child.poll() is None:  # an unexpected error in this process: do not orphan it
            child.kill()
            child.wait()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if stopping else code
