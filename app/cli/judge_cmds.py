"""``driftlens judge``: LLM judges of a run's responses (helpfulness, distraction, ack)."""

from __future__ import annotations

import dataclasses

import typer
from rich.table import Table
from rich.text import Text

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.executor_args import (
    ADDRESS_OPTION,
    EXECUTOR_OPTION,
    SHARD_QUESTIONS_OPTION,
    executor_for,
    here_or_sharded,
)
from app.cli.failures import retry_hint
from app.cli.options import CONCURRENCY_OPTION, RUN_OPTION, SUMMARY_JSON_OPTION
from app.cli.output import echo_json
from app.cli.progress import progress_callback
from app.cli.request_limits import (
    JUDGE_MAX_TOKENS_OPTION,
    MAX_ATTEMPTS_OPTION,
    TIMEOUT_OPTION,
    request_limits,
)

_out = out_console()


def register(app: typer.Typer) -> None:
    """Add ``judge`` to the root application."""
    app.command("judge")(judge_cmd)


def _rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def judge_cmd(
    ctx: typer.Context,
    run: str = RUN_OPTION,
    model: str = typer.Option(..., "--model", help="Judge model, provider/model (sim/default)."),
    concurrency: int = CONCURRENCY_OPTION,
    max_tokens: int | None = JUDGE_MAX_TOKENS_OPTION,
    timeout: float | None = TIMEOUT_OPTION,
    max_attempts: int | None = MAX_ATTEMPTS_OPTION,
    as_json: bool = SUMMARY_JSON_OPTION,
    executor: str | None = EXECUTOR_OPTION,
    address: str | None = ADDRESS_OPTION,
    shard_questions: int = SHARD_QUESTIONS_OPTION,
    allow_self_judging: bool = typer.Option(
        False,
        "--allow-self-judging",
        help="Let the model that generated the run judge it (refused otherwise).",
    ),
) -> None:
    """Score every response of a run; scores already stored for this judge are kept.

    Helpfulness (0-4) for every response; distraction and acknowledgement (0/1) for
    perturbed ones only. Unparseable replies get one repair request, then are stored as
    errors.
    """
    from llm.specs import ModelSpec
    from study.reasoning.judges import judge_run
    from study.reasoning.sharded.judge import judge_run_sharded

    spec = ModelSpec.parse(model)  # the one parse: a malformed spec is one line
    runner = executor_for(ctx, executor, address, model=spec)
    limits = request_limits(timeout, max_attempts, judge_max_tokens=max_tokens)
    with limits, session_for(ctx) as session, progress_callback(f"judging {run}") as bar:
        summary = here_or_sharded(
            ctx,
            runner,
            judge_run,
            judge_run_sharded,
            run,
            spec,
            session=session,
            concurrency=concurrency,
            per_shard=shard_questions,
            progress=bar,
            allow_self_judging=allow_self_judging,
        )
        from study.reasoning.calibrated_judges import calibrated_judge_rates

        rates, notes = calibrated_judge_rates(run, summary.model, session=session)
        summary = dataclasses.replace(
            summary, calibrated=[r.to_dict() for r in rates], calibrated_notes=list(notes)
        )
    if as_json:
        echo_json(summary)
        return
    _out.print(
        f"Judged run {run} with {summary.model}: {summary.requested} response(s) asked now, "
        f"{summary.skipped} already scored, {summary.repaired} repaired, "
        f"{summary.errors} unparseable, {summary.failed} failed at the endpoint.",
        markup=False,
    )
    roles = summary.roles
    _out.print(
        f"Roles: model under test {roles.get('model_under_test') or 'unknown'}, judge "
        f"{summary.model}"
        + (" (self-judging allowed)" if roles.get("self_judging") else "")
        + f". {summary.unscored} of {summary.verdicts} verdicts unscored (unparseable; "
        "excluded from the rates and the mean).",
        markup=False,
    )
    table = Table(title="stored scores by parse status")
    for column in ("kind", "ok", "repaired", "error"):
        table.add_column(column)
    for kind, counts in summary.by_kind.items():
        table.add_row(Text(kind), *(str(counts.get(s, 0)) for s in ("ok", "repaired", "error")))
    _out.print(table)
    _out.print(
        f"mean helpfulness {_rate(summary.mean_helpfulness)}, distraction rate "
        f"{_rate(summary.distraction_rate)}, acknowledgement rate "
        f"{_rate(summary.acknowledgement_rate)}",
        markup=False,
    )
    from study.reasoning.calibrated_judges import calibrated_lines

    for line in calibrated_lines(rates):
        _out.print(line, markup=False)
    for note in notes:
        _out.print(f"Calibration: {note}.", markup=False)
    retry_hint(_out, summary.failed)
