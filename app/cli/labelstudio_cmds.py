"""``driftlens labelstudio``: a local Label Studio for this workspace (start, stop, status)."""

from __future__ import annotations

import os

import typer

from app.cli.console import out_console
from app.cli.context import settings
from app.cli.groups import command_group
from app.cli.output import echo_json

_out = out_console()

labelstudio_app, register = command_group(
    "labelstudio",
    "Run Label Studio 1.23.2 locally (own virtualenv, 127.0.0.1, token kept in the workspace).",
)


@labelstudio_app.command("start")
def start_cmd(
    ctx: typer.Context,
    port: int | None = typer.Option(None, "--port", help="Port on 127.0.0.1 (default 8089)."),
) -> None:
    """Install (first time, about a minute) and start Label Studio; waits until it answers."""
    from annotation import server

    ws = settings(ctx).workspace
    if server.installed_version() != server.LS_VERSION:
        _out.print(
            f"Installing Label Studio {server.LS_VERSION} into {server.venv_dir()} ...",
            markup=False,
        )
    state = server.start(ws, port=port)
    _out.print(
        f"Label Studio is running at {state.url} (admin {state.admin_email}; password and "
        f"API token in {server.server_dir(ws) / server.STATE_FILE}, readable by you only).",
        markup=False,
    )
    if os.environ.get("LABEL_STUDIO_URL", "").strip():
        _out.print(
            "Note: LABEL_STUDIO_URL is set, so `driftlens annotate` uses that server, not this "
            "one; unset it to use the local server.",
            markup=False,
        )


@labelstudio_app.command("stop")
def stop_cmd(ctx: typer.Context) -> None:
    """Stop the workspace's Label Studio (its data and token are kept)."""
    from annotation import server

    stopped = server.stop(settings(ctx).workspace)
    _out.print("Label Studio stopped." if stopped else "Label Studio was not running.")


@labelstudio_app.command("status")
def status_cmd(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Whether the workspace's Label Studio runs and answers (exit 1 when it does not)."""
    from annotation import server

    st = server.status(settings(ctx).workspace)
    if as_json:
        echo_json(st)
    elif st.url is None:
        _out.print("No local Label Studio was started in this workspace.")
    elif st.healthy:
        _out.print(f"Label Studio is running at {st.url} (pid {st.pid}).", markup=False)
    else:
        _out.print(f"Label Studio at {st.url} is not running.", markup=False)
    if not st.healthy:
        raise typer.Exit(1)
