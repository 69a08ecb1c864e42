"""``driftlens generate``: baseline and perturbed answers for every selected question."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from app.cli.console import err_console, out_console
from app.cli.context import session_for
from app.cli.engine_args import apply_engine_args, engine_arg_option
from app.cli.executor_args import (
    ADDRESS_OPTION,
    EXECUTOR_OPTION,
    SHARD_QUESTIONS_OPTION,
    executor_for,
    here_or_sharded,
)
from app.cli.options import CONCURRENCY_OPTION, SUMMARY_JSON_OPTION
from app.cli.output import echo_json
from app.cli.progress import progress_callback
from app.cli.request_limits import MAX_ATTEMPTS_OPTION, TIMEOUT_OPTION, request_limits

if TYPE_CHECKING:
    from study.reasoning.generation import GenerationSummary

_out = out_console()
_err = err_console(soft_wrap=True)


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
    concurrency: int = CONCURRENCY_OPTION,
    temperature: float | None = typer.Option(None, "--temperature", help="Default 0.7."),
    top_p: float | None = typer.Option(None, "--top-p", help="Default 0.98."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Default 2048."),
    seed: int | None = typer.Option(
        None, "--seed", help="Run seed (default: derived from the run name)."
    ),
    catalog: str | None = typer.Option(
        None, "--catalog", help="Catalog NAME or NAME@VERSION (default: driftlens-default)."
    ),
    top_logprobs: int | None = typer.Option(
        None,
        "--top-logprobs",
        help="Store token logprobs with this many alternatives per token (0-20).",
    ),
    timeout: float | None = TIMEOUT_OPTION,
    max_attempts: int | None = MAX_ATTEMPTS_OPTION,
    as_json: bool = SUMMARY_JSON_OPTION,
    label: str | None = typer.Option(
        None,
        "--label",
        help="Then label the run's responses with this labeler (e.g. keywords); resumable.",
    ),
    engine_args: list[str] | None = engine_arg_option(),
    executor: str | None = EXECUTOR_OPTION,
    address: str | None = ADDRESS_OPTION,
    shard_questions: int = SHARD_QUESTIONS_OPTION,
) -> None:
    """Generate baseline + perturbed responses; re-running the same command resumes.

    Exits non-zero (3) when requests failed, saying how many, of which kind, and whether
    running it again can help.
    """
    from llm.specs import check_endpoint
    from storage.repo.runs import check_run_name
    from study.jobs.reporter import record_result
    from study.reasoning.generation import GenerationOptions, run_generation
    from study.reasoning.sharded.generate import run_generation_sharded

    # the name and the model's endpoint before anything (plan line, run row) happens
    check_run_name(run)
    spec = check_endpoint(model)  # the one parse of the spec
    apply_engine_args(engine_args)
    runner = executor_for(ctx, executor, address, model=spec)

    options = GenerationOptions(
        model=spec,
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
        top_logprobs=top_logprobs,
    )
    with (
        request_limits(timeout, max_attempts),
        session_for(ctx) as session,
        progress_callback(f"generating {run}", rate=True) as update,
    ):
        summary = here_or_sharded(
            ctx,
            runner,
            run_generation,
            run_generation_sharded,
            options,
            session=session,
            per_shard=shard_questions,
            progress=update,
            # said before the plan is built; with --json stdout carries the JSON alone
            on_plan=lambda line: typer.echo(line, err=as_json),
        )
    record_result(run=run)
    labeled = _label_after(ctx, run, label) if label and not summary.failed else None
    if labeled is not None:
        _out.print(labeled, markup=False)
    if as_json:
        echo_json(summary)
        if summary.failed:
            raise typer.Exit(3)
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
        _err.print(failure_advice(summary), markup=False)
        raise typer.Exit(3)


def _label_after(ctx: typer.Context, run: str, labeler: str) -> str:
    """Label the run just generated (``--label``); one line saying what was labeled."""
    from study.reasoning.trajectories import label_run

    with session_for(ctx) as session, progress_callback(f"labeling {run}") as update:
        summary = label_run(run, labeler, session=session, progress=update)
    return f"Labeled {summary.labeled_now} responses of run {run} with {labeler}."


def failure_advice(summary: GenerationSummary) -> str:
    """One paragraph on the failed requests: how many, why, and whether a rerun helps."""
    from study.request_failures import RequestFailures

    return RequestFailures(
        failed=summary.failed,
        requested=summary.requested,
        kinds=summary.failed_kinds,
        retry_after_s=summary.retry_after_s,
    ).advice()
