"""The toy instrument's CLI group ``driftlens toy``: ``run`` (and ``--report FILE``), ``show``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``toy`` group (the instrument registry calls this)."""
    toy = typer.Typer(help="Coin (toy instrument): the share of yes answers.")

    @toy.command("run")
    def run_cmd(
        model: Annotated[str, typer.Option("--model", "-m")] = "sim/coin-yes",
        samples: Annotated[int, typer.Option("--samples", min=1)] = 20,
        report: Annotated[Path | None, typer.Option("--report")] = None,
    ) -> None:
        """Ask the sample items and print the share of yes with its 95% interval."""
        from tests.toy_instrument.report import render
        from tests.toy_instrument.service import coin_study

        res = coin_study(model, samples=samples)
        typer.echo(f"{model}: {res.yes} of {res.n} yes, share {res.share:.3f} "
                   f"[{res.ci_low:.3f}, {res.ci_high:.3f}]")  # fmt: skip
        if report is not None:
            report.write_text(render(model, res), encoding="utf-8")

    @toy.command("show")
    def show_cmd(
        ctx: typer.Context, run: Annotated[str, typer.Argument(help="A stored toy run.")]
    ) -> None:
        """Print a stored run's answers, one line each (the answers are model output)."""
        from app.cli.context import session_for
        from storage.repo.instrument_runs import read_records, require_instrument_run

        with session_for(ctx) as session:
            run_id = require_instrument_run("toy", run, session=session).id
            assert run_id is not None
            records = read_records(run_id, session=session)
            print_answers([f"{r.item} #{r.unit}: {r.text}" for r in records])

    app.add_typer(toy, name="toy")


def print_answers(lines: list[str]) -> None:
    """Print answer lines on the CLI's console, which writes control characters out."""
    from app.cli.console import out_console

    console = out_console()
    for line in lines:
        console.print(line, soft_wrap=True)
