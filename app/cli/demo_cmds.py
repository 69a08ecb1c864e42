"""``driftlens demo``: every instrument's simulated study, offline, no keys, in one workspace.

A shared room: the command loops over the instrument registry in listing order, calls each
plugin's ``cli_demo`` part (which runs its demo and hands back a
:class:`~driftlens_plugins.DemoOutcome`) and prints what they say, then the time per stage
and what to open next. It names no instrument.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack

import typer
from rich.text import Text

from app.cli.console import SafeConsole
from app.cli.context import session_for, settings
from app.cli.progress import progress_callback
from app.cli.request_limits import bootstrap_option, bounded_option
from driftlens_plugins import DemoOutcome, instruments, load_ref
from study.limits import SAMPLES

# markup off: every line an instrument hands back is plain text
_out = SafeConsole(highlight=False, soft_wrap=True, markup=False)

#: Width of the label column in the ``Next:`` list.
LABEL_WIDTH = 20


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the root application."""
    app.command("demo")(demo_cmd)


def demo_cmd(
    ctx: typer.Context,
    samples: int = bounded_option(
        2, "--samples", bound=SAMPLES, help="Samples per question and condition (1..1,000)."
    ),
    bootstrap: int = bootstrap_option(10_000, short=False),
) -> None:
    """Seed a workspace and run every instrument's simulated study: generate over HTTP or in
    process, label or judge offline, analyse and write each report.

    Runs with no network and no keys; running it again resumes and reuses what is stored.
    """
    conf = settings(ctx)
    _out.print(f"Workspace: {conf.workspace}")
    outcomes: list[DemoOutcome] = []
    seconds: list[tuple[str, float]] = []
    for plugin in instruments():
        if plugin.cli_demo is None:
            continue
        part = load_ref(plugin.cli_demo)
        t0 = time.perf_counter()
        with ExitStack() as stack, session_for(ctx) as session:

            def stage(name: str, stack: ExitStack = stack) -> Callable[[int, int], None]:
                return stack.enter_context(progress_callback(name))

            outcome = part(
                session=session,
                workspace=conf.workspace,
                bootstrap=bootstrap,
                samples=samples,
                stage=stage,
            )
        # an instrument that times no stages of its own is timed as one stage, by name
        seconds += list(outcome.seconds) or [(plugin.name, time.perf_counter() - t0)]
        print_outcome(outcome)
        outcomes.append(outcome)
    _out.print("Time per stage: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds))
    footer = [line for o in outcomes for line in o.footer]
    if footer:
        _out.print()
        for line in footer:
            _out.print(line)
    print_next(
        outcomes,
        [("open the workbench", f".venv/bin/driftlens --workspace {conf.workspace} app")],
    )


def print_outcome(outcome: DemoOutcome) -> None:
    """One instrument's summary: the SIMULATED DATA banner, then its lines as they are."""
    if outcome.simulated:
        banner = Text("SIMULATED DATA", style="bold red")
        if outcome.banner:
            banner.append(f" — {outcome.banner}")
        _out.print(banner)
    for line in outcome.lines:
        _out.print(line)


def print_next(outcomes: Sequence[DemoOutcome], shared: Sequence[tuple[str, str]] = ()) -> None:
    """The ``Next:`` list: every report, the ``shared`` lines, then each demo's own."""
    _out.print()
    _out.print(Text("Next:", style="bold"))
    rows = [
        *((r.label, str(r.path)) for o in outcomes for r in o.reports),
        *shared,
        *(line for o in outcomes for line in o.next_lines),
    ]
    for label, text in rows:
        _out.print(f"  {label:<{LABEL_WIDTH}} {text}")
