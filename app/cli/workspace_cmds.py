"""Workspace commands: ``init``, ``info`` and ``vacuum``."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from app.cli.console import SafeConsole
from app.cli.context import settings
from app.cli.output import echo_json

_out = SafeConsole(highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``init``, ``info`` and ``vacuum`` to the root application."""
    app.command("init")(init_cmd)
    app.command("info")(info_cmd)
    app.command("vacuum")(vacuum_cmd)


def init_cmd(ctx: typer.Context) -> None:
    """Create the workspace (folder + database at the latest schema); safe to run again."""
    from storage.workspace import init_workspace

    info = init_workspace(settings(ctx))
    _out.print(f"Workspace ready: [bold]{escape(str(info.workspace))}[/]")
    _out.print(f"Database: {info.db_url} (schema {info.revision})")


def info_cmd(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Show the workspace, database, schema revision, table counts and core implementation."""
    import driftlens_core
    from storage.workspace import init_workspace

    info = init_workspace(settings(ctx))
    payload = {
        "workspace": str(info.workspace),
        "db_url": info.db_url,
        "revision": info.revision,
        "core_implementation": driftlens_core.implementation(),
        "counts": dict(info.counts),
    }
    if as_json:
        echo_json(payload)
        return
    table = Table(title="DriftLens workspace", show_header=False)
    for key in ("workspace", "db_url", "revision", "core_implementation"):
        table.add_row(key, str(payload[key]))
    for name, count in info.counts.items():
        table.add_row(f"rows: {name}", str(count))
    _out.print(table)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def vacuum_cmd(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Compact the database and refresh its statistics (SQLite VACUUM + ANALYZE,
    PostgreSQL VACUUM ANALYZE); prints the size before and after.

    Run it after a migration or a large deletion: freed space stays in the file until
    then. On SQLite it needs free disk about the size of the database and waits for
    other writers.
    """
    from dataclasses import asdict

    from storage.maintenance import vacuum_database
    from storage.workspace import init_workspace, workspace_engine

    state = settings(ctx)
    init_workspace(state)  # the schema at head (a vacuum never runs on a half-migrated file)
    result = vacuum_database(workspace_engine(state))
    if as_json:
        echo_json({**asdict(result), "freed": result.freed})
        return
    _out.print(
        f"Vacuumed the {result.dialect} database in {result.seconds:.1f} s: "
        f"{_mb(result.bytes_before)} before, {_mb(result.bytes_after)} after "
        f"({_mb(result.freed)} freed)."
    )
