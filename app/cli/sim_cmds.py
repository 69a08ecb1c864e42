"""The ``sim`` command group: serve the drift simulator over HTTP, list its presets."""

from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.table import Table

from app.cli.console import SafeConsole
from app.cli.groups import command_group

_out = SafeConsole(highlight=False)
_err = SafeConsole(stderr=True, highlight=False)

sim_app, register = command_group(
    "sim", "The built-in drift simulator (known doses, no network, clearly marked simulated)."
)


@sim_app.command("serve")
def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
    port: int = typer.Option(8765, "--port", help="TCP port."),
    preset: str = typer.Option(
        "default", "--preset", help="Preset answering the bare model name 'sim'."
    ),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="SIM_API_KEY",
        help="Require this bearer token (default: SIM_API_KEY; none = open).",
        show_default=False,
    ),
    delay_ms: float = typer.Option(
        0.0,
        "--delay-ms",
        min=0.0,
        help="Answer each chat request after this delay (a latency-bound endpoint).",
    ),
) -> None:
    """Serve the simulator as an OpenAI-compatible API (POST /v1/chat/completions)."""
    from llm.sim.registry import get_preset
    from llm.sim.server import bind_socket, serve
    from study.catalog.document import load_default_catalog
    from study.sim_endpoint import server_parts

    chosen = get_preset(preset)  # fail early with the list of known presets
    sock = bind_socket(host, port)  # and on a busy port, before printing "serving"
    url = f"http://{host}:{port}/v1"
    if host not in ("127.0.0.1", "localhost", "::1"):
        _err.print(
            f"[yellow]Warning:[/] binding {escape(host)} exposes the simulator beyond this machine."
        )
    _out.print(f"DriftLens simulator (simulated answers) on [bold]{escape(url)}[/]")
    _out.print(
        f"  use: SIM_BASE_URL={url} SIM_API_KEY={'<your key>' if api_key else 'any'} "
        f"with model openai-api/sim/{chosen.name}"
    )
    _out.print("  Ctrl-C stops it.")
    # what the instruments add: the catalog's exact memory-line classes, the ontology
    # studio's and the instruments' known-truth answerers
    parts = server_parts(load_default_catalog())
    serve(
        host,
        port,
        api_key=api_key or None,
        classify_memory=parts.classify_memory,
        default_preset=chosen.name,
        log_level="warning",
        sock=sock,
        answerers=parts.answerers,
        delay_s=delay_ms / 1000.0,
    )


@sim_app.command("presets")
def presets_cmd(
    as_json: bool = typer.Option(False, "--json", help="Print the full presets as JSON."),
) -> None:
    """List the simulator presets and their doses."""
    from driftlens_plugins import PresetListing, instruments, load_ref
    from llm.sim.registry import all_presets, families

    if as_json:
        every = all_presets()
        typer.echo(json.dumps({n: p.model_dump(mode="json") for n, p in every.items()}, indent=2))
        return
    listings: list[PresetListing] = [
        load_ref(plugin.sim_presets)() for plugin in instruments() if plugin.sim_presets
    ]
    shown = {family for listing in listings for family in listing.families}
    for listing in listings:
        if listing.columns:
            table = Table(title=listing.heading)
            for i, col in enumerate(listing.columns):
                table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
            for row in listing.rows:
                table.add_row(*row)
            _out.print(table)
        else:
            _out.print(listing.heading)
        for line in listing.lines:
            _out.print(f"  {line}")
    # families registered without a listing of their own: their presets' descriptions
    for family, presets in families().items():
        if family in shown:
            continue
        _out.print(f"Presets registered by the {family} instrument (no drift doses):")
        for name, p in presets.items():
            _out.print(f"  sim/{name} (v{p.version}): {p.description}")
