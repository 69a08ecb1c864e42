"""``driftlens export``: files for other tools (a group; more exports join it later)."""

from __future__ import annotations

from pathlib import Path

import typer

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.groups import command_group
from app.cli.options import JSONL_OUT_OPTION, RUN_OPTION

_out = out_console()

#: The ``export`` group; other modules' exports are added here as subcommands.
export_app, register = command_group("export", "Export responses and other results to files.")


@export_app.command("responses")
def responses_cmd(
    ctx: typer.Context,
    run: str = RUN_OPTION,
    out: Path = JSONL_OUT_OPTION,
) -> None:
    """Write one JSON object per response of a run (question_id, condition, steps, ...)."""
    from study.reasoning.exports import export_responses_jsonl

    with session_for(ctx) as session:
        count = export_responses_jsonl(run, out, session=session)
    _out.print(f"Wrote {count} responses of run {run} to {out}.", markup=False)


@export_app.command("benchmark")
def benchmark_cmd(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", help="Output folder."),
    tier: str = typer.Option("core", "--tier", help="core, relaxed (core + relaxed) or all."),
) -> None:
    """Write benchmark.jsonl, benchmark.parquet and datasheet.md for a tier selection."""
    from study.reasoning.benchmark_export import export_benchmark

    with session_for(ctx) as session:
        result = export_benchmark(out, session=session, tier=tier)
    _out.print(
        f"Wrote {result.questions} question(s) ({tier}) to "
        + ", ".join(str(p) for p in result.files)
        + ".",
        markup=False,
    )


@export_app.command("preferences")
def preferences_cmd(
    ctx: typer.Context,
    run: str = RUN_OPTION,
    judge: str = typer.Option(..., "--judge", help="Judge model whose scores decide."),
    out: Path = JSONL_OUT_OPTION,
) -> None:
    """Write DPO preference pairs (prompt, chosen, rejected) from a run's judge scores."""
    from study.reasoning.preferences import export_preferences

    with session_for(ctx) as session:
        s = export_preferences(run, judge, out, session=session)
    _out.print(
        f"Wrote {s.pairs} pair(s) to {out} ({s.chosen} chosen and {s.rejected} rejected "
        f"candidates among {s.judged} judged responses).",
        markup=False,
    )
