"""The toy instrument's CLI group ``driftlens toy``: ``run`` (and ``--report FILE``)."""

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

    app.add_typer(toy, name="toy")
