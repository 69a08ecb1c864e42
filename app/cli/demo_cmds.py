"""``driftlens demo``: the whole pipeline on the embedded default, offline, no keys."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape

from app.cli.analyze_cmds import print_drift_summary
from app.cli.console import SafeConsole
from app.cli.context import session_for, settings
from app.cli.progress import progress_callback
from app.cli.request_limits import bootstrap_option, bounded_option
from study.limits import SAMPLES

_out = SafeConsole(highlight=False, soft_wrap=True)


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
    """Seed a workspace, generate with the simulator over HTTP, label offline, analyse, report.

    Runs with no network and no keys; running it again resumes and reuses what is stored.
    """
    from contextlib import ExitStack

    from study.reasoning.demo import DEMO_LABELER, DEMO_MODEL, DEMO_RUN, run_demo

    conf = settings(ctx)
    out_dir = conf.workspace / "reports" / DEMO_RUN
    _out.print(f"Workspace: {conf.workspace}")
    with ExitStack() as stack, session_for(ctx) as session:

        def stage(name: str) -> Callable[[int, int], None]:
            return stack.enter_context(progress_callback(name))

        result = run_demo(
            session=session, out_dir=out_dir, bootstrap=bootstrap, samples=samples, stage=stage
        )
    gen, lab, ana, flt = result.generation, result.labeling, result.analysis, result.filtering
    _out.print("[bold red]SIMULATED DATA[/] — every response comes from the built-in simulator.")
    _out.print(
        f"Questions added: {result.questions_added}. LLM filter: {flt.accepted} accepted, "
        f"{flt.rejected} rejected, {flt.errors} unparseable (kept as errors), "
        f"{flt.skipped} screened before."
    )
    _out.print(
        f"Responses: {gen.planned} planned, "
        f"{gen.already_done} already stored, {gen.succeeded} generated now, {gen.failed} failed; "
        f"parse status {dict(sorted(gen.parse_status.items()))}."
    )
    _out.print(
        f"Labeled {lab.labeled_now} responses ({lab.steps_labeled} steps, "
        f"{lab.unmapped_steps} unmapped) with {DEMO_LABELER} under {lab.ontology_version}."
    )
    print_drift_summary(
        ana, title="Drift by condition class (lower = more stable)", show_model=False
    )
    if result.round is not None:
        r = result.round
        confused = r["most_confused"][0] if r["most_confused"] else None  # type: ignore[index]
        _out.print(
            f"Ontology round {r['round']}: labelers {', '.join(r['labelers'])}; "  # type: ignore[arg-type]
            f"mean pairwise agreement {float(r['mean_pairwise']):.1f}%, "  # type: ignore[arg-type]
            f"Krippendorff alpha {float(r['krippendorff_alpha']):.3f}; "  # type: ignore[arg-type]
            f"most confused pair: {escape(str(confused))}."
        )
    # every other instrument's simulated demo, through the instrument registry
    from driftlens_plugins import instruments, load_ref

    seconds = dict(result.seconds)
    reports: list[tuple[str, Path]] = []
    for plugin in instruments():
        if plugin.cli_demo is None:
            continue
        t0 = time.perf_counter()
        with session_for(ctx) as session:
            path = load_ref(plugin.cli_demo)(
                session=session, workspace=conf.workspace, bootstrap=bootstrap
            )
        reports.append((plugin.title.lower(), path))
        seconds[plugin.name] = time.perf_counter() - t0
    # every stage the demo ran, the other instruments' demos included
    _out.print("Time per stage: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
    html = Path(ana.files["report_html"]).resolve()
    _out.print(
        f"\nModel: {escape(DEMO_MODEL)} · core implementation: {ana.provenance.implementation}"
    )
    _out.print("\n[bold]Next:[/]")
    _out.print(f"  open the report      {html}")
    for title, path in reports:
        _out.print(f"  {escape(title):<20} {path}")
    _out.print(f"  open the workbench   .venv/bin/driftlens --workspace {conf.workspace} app")
    _out.print(
        f"  re-run the stats     .venv/bin/driftlens stats {ana.files['drift_csv']} "
        f"--json stats.json"
    )
