"""``driftlens judges``: how far an instrument's findings depend on its judge."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.groups import command_group
from app.cli.options import RESULT_JSON_OPTION
from app.cli.output import echo_json
from app.cli.request_limits import bootstrap_option, bounded_option
from study.limits import JUDGE_RESAMPLES

if TYPE_CHECKING:
    from driftlens_core.alt_test import AltTestResult

_out = out_console()
judges_app, register = command_group(
    "judges", "Judge robustness: re-judge with new seeds and other judges."
)


@judges_app.command("robustness")
def robustness_cmd(
    ctx: typer.Context,
    instrument: str = typer.Option(..., "--instrument", help="conflicts, disposition or reasoning"),
    run: str = typer.Option(
        ..., "--run", help="The stored, judged run (disposition: the study's name)."
    ),
    resamples: int = bounded_option(
        3,
        "--resamples",
        bound=JUDGE_RESAMPLES,
        help="Judgements of the run's judge per answer (stored one included; 1..100).",
    ),
    judge: list[str] = typer.Option([], "--judge", help="Alternative judge (repeatable)."),
    primary: str | None = typer.Option(
        None, "--primary", help="The judge under test (default: the run's only judge)."
    ),
    sample: int = typer.Option(60, "--sample", min=1, help="Answers re-judged (stratified)."),
    bootstrap: int = bootstrap_option(2000),
    seed: int = typer.Option(0, "--seed"),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
    as_json: bool = RESULT_JSON_OPTION,
    batteries: Path | None = typer.Option(
        None, "--batteries", help="Disposition: the study's batteries (default: the sample)."
    ),
    labeler: str | None = typer.Option(
        None,
        "--labeler",
        help="Reasoning: the step labeler under test (--judge: other labelers); without it, "
        "the response judge of `driftlens judge` (helpfulness, distraction, acknowledgement).",
    ),
    min_per_class: int | None = typer.Option(
        None, "--min-per-class", min=1, help="Reasoning: pairs sampled at least per class (5)."
    ),
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
            # each instrument's adapter reads its own options
            options={"batteries": batteries, "labeler": labeler, "min_per_class": min_per_class},
        )
    if as_json:
        echo_json(result.to_dict())
        return
    for line in robustness_lines([result]):
        _out.print(line, markup=False, highlight=False)


@judges_app.command("calibration")
def calibration_cmd(
    table: Path = typer.Argument(..., help="CSV: one row per item, judge and human labels."),
    judge_col: str = typer.Option("judge", "--judge-column", help="The judge's label column."),
    human_col: str = typer.Option("human", "--human-column", help="The human majority column."),
    item_col: str = typer.Option("item", "--item-column", help="The item id column."),
    levels: str = typer.Option(..., "--levels", help="The full scale, in order: 0,1,2,3,4."),
    ordinal: bool = typer.Option(False, "--ordinal", help="Ordinal scale (weighted kappa)."),
    bootstrap: int = bootstrap_option(2000),
    seed: int = typer.Option(0, "--seed"),
    triage_out: Path | None = typer.Option(
        None, "--triage", help="Write every item, disagreements first, to this CSV."
    ),
) -> None:
    """A judge against the human majority: kappa / weighted kappa / alpha with bootstrap
    intervals, per-class TPR and TNR (Wilson), the confusion matrix, the bias, and the
    disagreements first (triage)."""
    from study.judge_robustness.calibration import calibrate_table, calibration_lines
    from study.safe_csv import write_frame_csv

    run = calibrate_table(
        table,
        judge_col=judge_col,
        human_col=human_col,
        item_col=item_col,
        levels=[v.strip() for v in levels.split(",") if v.strip()],
        ordinal=ordinal,
        bootstrap=bootstrap,
        seed=seed,
    )
    for line in calibration_lines(run):
        _out.print(line, markup=False, highlight=False)
    if triage_out is not None:
        import pandas as pd

        write_frame_csv(pd.DataFrame(run.triage, columns=["item", "judge", "human"]), triage_out)
        _out.print(f"Wrote {triage_out}", markup=False, highlight=False)


def alt_test_line(res: AltTestResult) -> str:
    """One line: may the judge replace the annotators (alternative annotator test)?"""
    head = (
        f"Alternative annotator test (epsilon {res.epsilon:g}, Benjamini-Yekutieli q "
        f"{res.q:g}, {res.n_items} items with 2+ humans): {res.verdict}"
    )
    if res.verdict == "too few":
        return f"{head} (it needs 50 items with two or more human labels)."
    wins = ", ".join(
        f"{a.annotator} {a.model_wins:.2f} vs {a.annotator_wins:.2f}" for a in res.annotators
    )
    return f"{head}; winning rate {res.winning_rate:.2f} (judge vs annotator wins: {wins})."


@judges_app.command("calibration-table")
def calibration_table_cmd(
    ctx: typer.Context,
    study: str = typer.Argument(
        ...,
        help="The Label Studio study (disposition_check, test_awareness, conflict_rubric, "
        "helpfulness, label_check).",
    ),
    out: Path = typer.Option(..., "--out", help="The CSV to write (item, judge, human)."),
) -> None:
    """Each item's judge label beside the human majority of a pulled Label Studio study:
    the table `driftlens judges calibration` reads."""
    import shlex

    from study.judge_robustness.human_table import calibration_table
    from study.safe_csv import write_frame_csv

    with session_for(ctx) as session:
        got = calibration_table(study, session=session)
    write_frame_csv(got.table, out)
    _out.print(
        f"Wrote {out}: {len(got.table)} items judged by {got.judge} with a human majority "
        f"({got.no_majority} without a majority, {got.no_judge_label} without a judge label).",
        markup=False,
        highlight=False,
    )
    if got.alt_test is not None:
        _out.print(alt_test_line(got.alt_test), markup=False, highlight=False)
    command = ["driftlens", "judges", "calibration", str(out), "--levels", ",".join(got.levels)]
    if got.ordinal:
        command.append("--ordinal")
    _out.print(f"Next: {shlex.join(command)}", markup=False, highlight=False)


@judges_app.command("triage")
def triage_cmd(
    ctx: typer.Context,
    study: str = typer.Argument(..., help="The pulled Label Studio study (as calibration-table)."),
    new_project: bool = typer.Option(
        False, "--new-project", help="Create a fresh triage project even if one is recorded."
    ),
    as_json: bool = RESULT_JSON_OPTION,
) -> None:
    """Push the judge-human and judge-judge disagreements, largest first, as a Label Studio
    project of their own (STUDY_triage); pushing again adds only what is not there yet."""
    from dataclasses import asdict

    from annotation.sync import ensure_project, push
    from app.cli.annotate_cmds import _client
    from study.jobs.reporter import record_result
    from study.judge_robustness.triage import triage_tasks

    # The tasks are chosen first: a study with nothing to triage stops before a project exists.
    with session_for(ctx) as session:
        plan = triage_tasks(study, session=session)
    client = _client(ctx)
    with session_for(ctx) as session:
        project = ensure_project(plan.triage_study, client=client, session=session, new=new_project)
    with session_for(ctx) as session:
        result = push(plan.triage_study, list(plan.tasks), client=client, session=session)
    record_result(
        project_id=result.project_id,
        imported=result.imported,
        selected=result.selected,
        already_present=result.already_present,
    )
    if as_json:
        echo_json(
            {
                **asdict(result),
                "project_created": project.created,
                "judge": plan.judge,
                "compared": plan.compared,
                "disagreeing": plan.disagreeing,
                "judge_compared": plan.judge_compared,
                "judge_disagreeing": plan.judge_disagreeing,
            }
        )
        return
    verb = "Created" if project.created else "Reused"
    _out.print(
        f"{plan.disagreeing} of {plan.compared} judge-human pairs of {study} disagree "
        f"(judge {plan.judge}), {plan.judge_disagreeing} of {plan.judge_compared} "
        f"judge-judge pairs; {verb.lower()} project {result.project_id} "
        f"({plan.triage_study}): imported {result.imported} of {result.selected} tasks "
        f"({result.already_present} were already there). Open {result.project_url}",
        markup=False,
        highlight=False,
    )
