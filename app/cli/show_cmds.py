"""``driftlens show``: a reasoning-drift run's stored answers and their judges' verdicts."""

from __future__ import annotations

import typer

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.options import RUN_OPTION, SHOW_LIMIT_OPTION

_out = out_console()


def register(app: typer.Typer) -> None:
    """Add ``show`` to the root application."""
    app.command("show")(show_cmd)


def show_cmd(
    ctx: typer.Context,
    run: str = RUN_OPTION,
    limit: int = SHOW_LIMIT_OPTION,
    question: str | None = typer.Option(None, "--question", help="Only this question's id."),
) -> None:
    """Print a run's stored answers (steps, answer) with every judge's scores and reason."""
    from app.cli.transcripts import print_transcripts
    from study.transcripts import run_transcripts

    with session_for(ctx) as session:
        shown, total = run_transcripts(run, session=session, limit=limit, question=question)
    print_transcripts(_out, run, shown, total)
