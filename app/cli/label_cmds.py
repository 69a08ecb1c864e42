"""``driftlens label``: map every reasoning step of a run to the ontology."""

from __future__ import annotations

import typer

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.engine_args import apply_engine_args, engine_arg_option
from app.cli.executor_args import (
    ADDRESS_OPTION,
    EXECUTOR_OPTION,
    SHARD_QUESTIONS_OPTION,
    executor_for,
    here_or_sharded,
)
from app.cli.options import ALLOW_SELF_JUDGING_OPTION, RUN_OPTION, SUMMARY_JSON_OPTION
from app.cli.output import echo_json
from app.cli.progress import progress_callback
from app.cli.request_limits import (
    LABEL_CONCURRENCY_OPTION,
    LABELER_MAX_TOKENS_OPTION,
    MAX_ATTEMPTS_OPTION,
    TIMEOUT_OPTION,
    request_limits,
)

_out = out_console()


def register(app: typer.Typer) -> None:
    """Add ``label`` to the root application."""
    app.command("label")(label_cmd)


def label_cmd(
    ctx: typer.Context,
    run: str = RUN_OPTION,
    labeler: str = typer.Option("keywords", "--labeler", help="Labeler spec, e.g. keywords."),
    ontology_version: str | None = typer.Option(
        None, "--ontology-version", help="Version id, NAME or NAME@N (default: latest driftlens)."
    ),
    max_tokens: int | None = LABELER_MAX_TOKENS_OPTION,
    concurrency: int | None = LABEL_CONCURRENCY_OPTION,
    timeout: float | None = TIMEOUT_OPTION,
    max_attempts: int | None = MAX_ATTEMPTS_OPTION,
    as_json: bool = SUMMARY_JSON_OPTION,
    engine_args: list[str] | None = engine_arg_option(),
    executor: str | None = EXECUTOR_OPTION,
    address: str | None = ADDRESS_OPTION,
    shard_questions: int = SHARD_QUESTIONS_OPTION,
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
) -> None:
    """Label every step of every response of a run (resumable: labeled responses are skipped)."""
    from study.reasoning.sharded.label import label_run_sharded
    from study.reasoning.trajectories import label_run

    apply_engine_args(engine_args)
    runner = executor_for(ctx, executor, address)

    limits = request_limits(
        timeout, max_attempts, labeler_max_tokens=max_tokens, label_concurrency=concurrency
    )
    with limits, session_for(ctx) as session, progress_callback(f"labeling {run}") as update:
        summary = here_or_sharded(
            ctx,
            runner,
            label_run,
            label_run_sharded,
            run,
            labeler,
            session=session,
            ontology_version=ontology_version,
            per_shard=shard_questions,
            progress=update,
            allow_self_judging=allow_self_judging,
        )
    if as_json:
        echo_json(summary)
        return
    _out.print(
        f"Labeled {summary.labeled_now} responses ({summary.steps_labeled} steps, "
        f"{summary.unmapped_steps} unmapped) of run {summary.run} with {summary.labeler} "
        f"under {summary.ontology_version}; {summary.already_labeled} were already labeled, "
        f"{summary.without_steps} have no parsed steps."
    )
    if labeler.strip().startswith("llm:"):
        from llm.roles import GENERATION, role_lines

        with session_for(ctx) as session:
            for line in role_lines(GENERATION, [run], session=session):
                _out.print(line, markup=False, highlight=False)
    if summary.failed:
        _out.print(
            f"{summary.failed} response(s) could not be labeled (the request failed); "
            "run the same command again to retry them.",
            markup=False,
        )
