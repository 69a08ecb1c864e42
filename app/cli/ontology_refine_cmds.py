"""``driftlens ontology refine``: the refinement loop as one resumable command (a job)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.options import ALLOW_SELF_JUDGING_OPTION
from app.cli.progress import progress_callback

_out = out_console()


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def refine_cmd(
    ctx: typer.Context,
    run: str = typer.Option(..., "--run", help="Generation run to sample responses from."),
    labelers: str = typer.Option(
        ..., "--labelers", help="Comma-separated labeler specs (two or more)."
    ),
    rewriter: str = typer.Option(..., "--rewriter", help="Model that rewrites definitions."),
    ontology_version: str | None = typer.Option(
        None, "--ontology-version", help="Starting version: id, NAME or NAME@N (default driftlens)."
    ),
    target: float = typer.Option(
        0.83, "--target", help="Stop when mean pairwise agreement holds this for two rounds."
    ),
    trigger: float = typer.Option(
        0.70, "--trigger", help="Rewrite leaf pairs whose agreement is below this."
    ),
    max_rounds: int = typer.Option(78, "--max-rounds", help="Stop after this many rounds."),
    sample: int = typer.Option(100, "--sample", help="Responses labeled per round."),
    holdout: float = typer.Option(
        0.3, "--holdout", help="Share of a pair's split steps held out for the gate."
    ),
    margin: float = typer.Option(0.02, "--margin", help="The gate's margin on the held-out gain."),
    review: str = typer.Option(
        "auto",
        "--review",
        help="auto: the gate decides; pause: stop for a researcher at each gated proposal.",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of samples, splits and bootstraps."),
    patience: int = typer.Option(
        5, "--patience", help="Rounds without an accepted rewrite before a plateau stop."
    ),
    max_pairs: int = typer.Option(3, "--max-pairs", help="Leaf pairs tried per round."),
    no_gate: bool = typer.Option(
        False,
        "--no-gate",
        help="Accept every parseable proposal (gate statistics still stored): for contrast only.",
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write the loop's history as JSON to this file."
    ),
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
) -> None:
    """Label, measure, rewrite the most confused pair, gate it on held-out steps; repeat.

    Running the same command again resumes the loop where it stopped (or prints it, once
    it has ended).
    """
    from llm.specs import ModelSpec
    from ontology.refinement import RefineConfig, check_config
    from storage.errors import ConfigError
    from study.jobs.reporter import record_result

    if review not in ("auto", "pause"):
        raise ConfigError(f"--review must be auto or pause, not {review!r}")
    if not rewriter.strip():
        raise ConfigError("give --rewriter MODEL (e.g. sim/rewriter-operational)")
    config = RefineConfig(
        run=run,
        labelers=tuple(s.strip() for s in labelers.split(",") if s.strip()),
        rewriter=ModelSpec.parse(rewriter),
        ontology_version=ontology_version,
        target=target,
        trigger=trigger,
        max_rounds=max_rounds,
        sample=sample,
        holdout=holdout,
        margin=margin,
        review="pause" if review == "pause" else "auto",
        seed=seed,
        patience=patience,
        max_pairs=max_pairs,
        gate=not no_gate,
        allow_self_judging=allow_self_judging,
    )
    check_config(config)  # before a session: bad options store nothing
    from ontology.refinement_loop import refine

    with session_for(ctx) as session, progress_callback("refining (rounds)") as update:
        result = refine(
            config,
            session=session,
            progress=update,
            notify=lambda line: _out.print(line, markup=False),
        )
    data = result.to_json()
    record_result(loop=result.loop_id, run=run, stop_reason=result.stop_reason)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    start, final = result.start_agreement, result.final_agreement
    _out.print(
        f"Loop {result.loop_id}: {data['n_rounds']} rounds, {data['n_proposals']} proposals, "
        f"{data['n_accepted']} accepted; {result.start_version} -> {result.final_version}; "
        f"mean pairwise {_share(start)} -> {_share(final)}; "
        f"stopped: {result.stop_reason or 'not yet'}.",
        markup=False,
    )


def refine_report_cmd(
    ctx: typer.Context,
    loop: int = typer.Argument(..., help="Refinement loop id."),
    out: Path = typer.Option(..., "--out", help="HTML file to write."),
    paraphraser: str | None = typer.Option(
        None,
        "--paraphraser",
        help="Model that paraphrases the definitions (default: the rewriter).",
    ),
) -> None:
    """Write a loop's HTML report with its final version's agreement tables.

    The cross-model table comes from the stored rounds; the within-model and robustness
    tables label the final round's responses again (stored, so a second report labels
    nothing new).
    """
    from llm.specs import ModelSpec
    from ontology.refinement_loop import loop_result
    from ontology.refinement_report import render_html
    from ontology.refinement_validation import final_version_tables
    from storage.errors import NotFoundError
    from storage.refinement_models import RefinementLoop

    spec = None if paraphraser is None else ModelSpec.parse(paraphraser)
    with session_for(ctx) as session, progress_callback("labeling (steps)") as update:
        if session.get(RefinementLoop, loop) is None:
            raise NotFoundError(f"no refinement loop {loop} in this workspace")
        result = loop_result(loop, session=session)
        tables = final_version_tables(
            result,
            session=session,
            paraphraser=spec,
            progress=update,
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(result, tables), encoding="utf-8")
    for row in tables.within:
        _out.print(
            f"{row['labeler']}: within-model {row['within-model agreement %']:.1f} %", markup=False
        )
    for row in tables.robustness:
        _out.print(
            f"{row['labeler']}: under a paraphrase {row['agreement under a paraphrase %']:.1f} %",
            markup=False,
        )
    _out.print(f"Wrote {out}", markup=False)
