"""``driftlens judges``: how far an instrument's findings depend on its judge."""

from __future__ import annotations

import typer

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.output import echo_json

_out = out_console()
judges_app = typer.Typer(
    help="Judge robustness: re-judge with new seeds and other judges.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    """Add the ``judges`` group to the root application."""
    app.add_typer(judges_app, name="judges")


@judges_app.command("robustness")
def robustness_cmd(
    ctx: typer.Context,
    instrument: str = typer.Option(..., "--instrument", help="conflicts"),
    run: str = typer.Option(..., "--run", help="The stored, judged run."),
    resamples: int = typer.Option(
        3,
        "--resamples",
        min=1,
        help="Judgements of the run's judge per answer (stored one included).",
    ),
    judge: list[str] = typer.Option([], "--judge", help="Alternative judge (repeatable)."),
    primary: str | None = typer.Option(
        None, "--primary", help="The judge under test (default: the run's only judge)."
    ),
    sample: int = typer.Option(60, "--sample", min=1, help="Answers re-judged (stratified)."),
    bootstrap: int = typer.Option(2000, "--bootstrap", "-B", min=1),
    seed: int = typer.Option(0, "--seed"),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Re-judge a stratified sample: flip rates, the interval with and without judge noise,
    and conclusions that flip under another judge; kept for the instrument's report."""
    from study.judge_robustness.report import robustness_lines
    from study.judge_robustness.service import judge_robustness

    with session_for(ctx) as session:
        result = judge_robustness(
            instrument,
            run,
            session=session,
            resamples=resamples,
            judges=judge,
            primary=primary,
            sample=sample,
            bootstrap=bootstrap,
            seed=seed,
            concurrency=concurrency,
        )
    if as_json:
        echo_json(result.to_dict())
        return
    for line in robustness_lines([result]):
        _out.print(line, markup=False, highlight=False)
