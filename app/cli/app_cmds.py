"""``driftlens app``: start the Streamlit workbench on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer

from app.cli.context import settings


def register(app: typer.Typer) -> None:
    """Add ``app`` to the root application."""
    app.command("app")(app_cmd)


def streamlit_command(*, host: str, port: int) -> list[str]:
    """The command line that serves the workbench (also used by the browser tests)."""
    script = Path(__file__).resolve().parents[1] / "streamlit_app.py"
    return [
        sys.executable,
        "-m",
        "streamlit",
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
    raise typer.Exit(subprocess.call(streamlit_command(host=host, port=port), env=env))
