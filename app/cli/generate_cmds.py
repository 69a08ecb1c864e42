"""``driftlens generate``: baseline and perturbed answers for every selected question."""

from __future__ import annotations

import typer
from rich.console import Console

from app.cli.context import session_for
from app.cli.output import echo_json
from app.cli.progress import progress_callback

_out = Console(highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``generate`` to the root application."""
    app.command("generate")(generate_cmd)


def generate_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="provider/model, e.g. sim/default."),
    run: str = typer.Option(..., "--run", help="Run name (re-use it to resume)."),
    questions: str = typer.Option("all", "--questions", help="all, core or relaxed."),
    perturbations: str = typer.Option(
        "all",
        "--perturbations",
        help="all, none, or a comma list of classes (noise, attribute, life_event), "
        "categories (age, bereavement, ...) or keys.",
    ),
    samples: int = typer.Option(2, "--samples", help="Samples per (question, condition)."),
    concurrency: int = typer.Option(16, "--concurrency", help="Requests in flight."),
    temperature: float | None = typer.Option(None, "--temperature", help="Default 0.7."),
    top_p: float | None = typer.Option(None, "--top-p", help="Default 0.98."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Default 2048."),
    seed: int | None = typer.Option(
        None, "--seed", help="Run seed (default: derived from the run name)."
    ),
    catalog: str | None = typer.Option(
        None, "--catalog", help="Catalog NAME or NAME@VERSION (default: driftlens-default)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Generate baseline + perturbed responses; re-running the same command resumes."""
    from study.generation import GenerationOptions, run_generation

    options = GenerationOptions(
        model=model,
        run=run,
        questions=questions,
        perturbations=perturbations,
        samples=samples,
        concurrency=concurrency,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        catalog=catalog,
    )
    with session_for(ctx) as session, progress_callback(f"generating {run}", rate=True) as update:
        summary = run_generation(options, session=session, progress=update)
    if as_json:
        echo_json(summary)
        return
    statuses = ", ".join(f"{k} {v}" for k, v in summary.parse_status.items()) or "none"
    _out.print(
        f"Run {summary.run} ({summary.model}{', simulated' if summary.simulated else ''}): "
        f"{summary.planned} planned, {summary.already_done} already stored, "
        f"{summary.succeeded} answered now, {summary.failed} failed; status {summary.status}. "
        f"Parse status of new responses: {statuses}.",
        markup=False,
    )
    if summary.failed:
        _out.print("Run the same command again to retry the failed requests.", markup=False)
