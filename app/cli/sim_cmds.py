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
    from llm.sim.registry import DRIFT_FAMILY, all_presets, families
    from study.reasoning.sim.presets import dose_range

    if as_json:
        every = all_presets()
        typer.echo(json.dumps({n: p.model_dump(mode="json") for n, p in every.items()}, indent=2))
        return
    table = Table(title="Simulator presets (dose = edit probability per step)")
    for col in ("preset", "noise", "attribute", "life event", "model noise", "malformed"):
        table.add_column(col, justify="left" if col == "preset" else "right", no_wrap=True)

    def span(lo_hi: tuple[float, float]) -> str:
        lo, hi = lo_hi
        return f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}"

    drift = families().get(DRIFT_FAMILY, {})
    for name, p in drift.items():
        table.add_row(
            f"sim/{name}",
            span(dose_range(p, "noise")),
            span(dose_range(p, "attribute")),
            span(dose_range(p, "life_event")),
            f"{p.model_noise:.2f}",
            f"{p.malformed_rate:.0%}",
        )
    _out.print(table)
    for name, p in drift.items():
        _out.print(f"  sim/{name} (v{p.version}): {p.description}")
    for family, presets in families().items():
        if family == DRIFT_FAMILY:
            continue
        _out.print(f"Presets registered by the {family} instrument (no drift doses):")
        for name, p in presets.items():
            _out.print(f"  sim/{name} (v{p.version}): {p.description}")
    _other_instrument_presets()


def _other_instrument_presets() -> None:
    """The source-reliance and disposition presets (answered by their own responders)."""
    from study.disposition.sim.model import DISPOSITION_PRESETS
    from study.sources.sim.probe import SOURCE_PRESETS

    _out.print("Presets of the source-reliance simulator (`driftlens sources run --model`):")
    for name, sp in SOURCE_PRESETS.items():
        _out.print(f"  sim/{name}: {sp.description}")
    _out.print(
        "Presets of the disposition simulator (`driftlens disposition arms add --model "
        "sim/<preset>-d<dose>[-s<train seed>]`, dose in % harmful training answers):"
    )
    for name, dp in DISPOSITION_PRESETS.items():
        _out.print(f"  sim/{name}-d<dose>: {dp.description}")
