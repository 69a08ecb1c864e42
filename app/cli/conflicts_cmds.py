"""``driftlens conflicts``: the memory-conflict instrument (banks, rubric judges, statistics)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from app.cli.conflicts_stats import fixed, print_stats
from app.cli.console import SafeConsole
from app.cli.executor_args import (
    ADDRESS_OPTION,
    EXECUTOR_OPTION,
    SHARD_QUESTIONS_OPTION,
    executor_for,
    here_or_sharded,
)
from app.cli.failures import exit_if_failed
from app.cli.groups import command_group
from app.cli.options import (
    ALLOW_SELF_JUDGING_OPTION,
    JSON_OPTION,
    RANDOM_SEED_OPTION,
    SHOW_LIMIT_OPTION,
)
from app.cli.output import write_json
from app.cli.request_limits import bootstrap_option
from driftlens_plugins import DemoOutcome, DemoReport, Stage
from study.request_failures import RequestFailures

_out = SafeConsole(highlight=False, width=None if os.isatty(1) else 150)

conflicts_app, register = command_group(
    "conflicts", "Memory conflicts: banks of conflicting memories, rubric judges, statistics."
)


@conflicts_app.command("stats")
def stats_cmd(
    table: Path = typer.Argument(
        ...,
        help="CSV: model, judge, instance_id, type, distractors, d1..d5 (0-4, empty = n/a), "
        "d6 (safe/partial/unsafe or empty), optional action (commit, conditionalize, clarify, "
        "verify, defer, reversible_trial; empty = unknown).",
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the results as JSON here."),
    bootstrap: int = bootstrap_option(2000),
    seed: int | None = RANDOM_SEED_OPTION,
) -> None:
    """Rubric means with CIs, paired distractor effect, judge agreement, D6 and abstention."""
    from study.conflicts.analysis import analyze_scores, read_scores_csv

    result = analyze_scores(read_scores_csv(table), bootstrap=bootstrap, seed=seed).to_dict()
    if json_out is not None:
        write_json(json_out, result)
    print_stats(result)
    if json_out is not None:
        _out.print(f"Wrote {json_out}", markup=False)


@conflicts_app.command("import")
def import_cmd(
    ctx: typer.Context,
    file: Path | None = typer.Argument(
        None, help="JSONL bank file (one instance per line); omit with --sample."
    ),
    sample: bool = typer.Option(False, "--sample", help="Import the shipped sample banks."),
    check: bool = typer.Option(False, "--check", help="Only validate; store nothing."),
) -> None:
    """Validate memory banks (word counts, person, timestamps, leakage...) and store them."""
    from app.cli.context import session_for
    from storage.errors import InputError
    from study.conflicts.items import import_bank_file, read_banks, sample_banks_path

    if file is None and not sample:
        raise InputError("Give a JSONL bank file, or --sample for the shipped sample.")
    if check:
        instances = read_banks(file or sample_banks_path())
        _out.print(f"{len(instances)} instance(s) valid; nothing stored (--check).", markup=False)
        return
    with session_for(ctx) as session:
        res = import_bank_file(None if sample else file, session=session)
    _out.print(
        f"Imported {res.total} bank instance(s) from {res.source}: {res.inserted} new, "
        f"{res.updated} updated, {res.unchanged} unchanged.",
        markup=False,
    )


@conflicts_app.command("generate")
def generate_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Response model, provider/model."),
    run: str = typer.Option(..., "--run", help="Run name (rerun the same name to resume)."),
    distractors: str = typer.Option("6", "--distractors", help="Doses: 6, 0,6 or 0..6."),
    samples: int = typer.Option(1, "--samples", min=1, help="Samples per bank and dose."),
    track: str = typer.Option(
        "oracle", "--track", help="oracle, pipeline or no-memory (an empty bank: the baseline)."
    ),
    system: str = typer.Option(
        "sim-lossy",
        "--system",
        help="Memory system (pipeline track): sim-lossy, sim-dialogue or mem0 (real Mem0).",
    ),
    dialogues: Path | None = typer.Option(
        None,
        "--dialogues",
        help="Dialogue JSONL for a system that reads dialogues (default: the shipped sample).",
    ),
    memory_model: str = typer.Option(
        "sim/default",
        "--memory-model",
        help="Model Mem0 extracts memories with (sim/<preset> runs a local simulator).",
    ),
    memory_embedding_model: str = typer.Option(
        "sim-embedding", "--memory-embedding-model", help="Embedding model for Mem0."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Run seed (default: from the name)."),
    concurrency: int = typer.Option(16, "--concurrency", min=1, help="Requests in flight."),
    executor: str | None = EXECUTOR_OPTION,
    address: str | None = ADDRESS_OPTION,
    shard_banks: int = SHARD_QUESTIONS_OPTION,
) -> None:
    """Answer every imported bank at each distractor dose (cached, resumable).

    With ``--executor`` the banks are cut into shards (``--shard-questions`` banks each).
    """
    from app.cli.context import session_for
    from app.cli.progress import progress_callback
    from llm.specs import ModelSpec, check_endpoint
    from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts, parse_doses
    from study.conflicts.sharded import generate_conflicts_sharded

    spec = check_endpoint(model)  # the one parse, before the plan line and the run row
    memory_spec = ModelSpec.parse(memory_model)
    runner = executor_for(ctx, executor, address, model=spec)

    opts = ConflictGenerationOptions(
        model=spec,
        run=run,
        doses=parse_doses(distractors),
        samples=samples,
        track=track,
        extractor=system,
        dialogues=dialogues,
        memory_model=memory_spec,
        memory_embedding_model=memory_embedding_model,
        seed=seed,
        concurrency=concurrency,
    )

    def say(line: str) -> None:  # the plan's size, before it is built
        _out.print(line, markup=False)

    with session_for(ctx) as session, progress_callback(f"conflicts {run}") as bar:
        s = here_or_sharded(
            ctx,
            runner,
            generate_conflicts,
            generate_conflicts_sharded,
            opts,
            session=session,
            per_shard=shard_banks,
            progress=bar,
            on_plan=say,
        )
    _out.print(
        f"Run {s.run} ({s.model}): {s.planned} planned, {s.already_done} already stored, "
        f"{s.requested} requested now, {s.failed} failed; status {s.status}.",
        markup=False,
    )
    if track == "pipeline":
        _out.print(f"Bank observability: {s.observability}", markup=False)
    exit_if_failed(RequestFailures(s.failed, s.requested, s.failed_kinds))


@conflicts_app.command("judge")
def judge_cmd(
    ctx: typer.Context,
    run: str = typer.Option(..., "--run", help="The conflicts run."),
    judge: list[str] = typer.Option(..., "--judge", help="Judge model (repeat for several)."),
    concurrency: int = typer.Option(16, "--concurrency", min=1, help="Requests in flight."),
    executor: str | None = EXECUTOR_OPTION,
    address: str | None = ADDRESS_OPTION,
    shard_banks: int = SHARD_QUESTIONS_OPTION,
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
) -> None:
    """Score every answer on D1-D5 (and D6 on high-risk banks); each judge kept separately.

    With ``--executor`` each judge's pass is cut into shards of banks.
    """
    from app.cli.context import session_for
    from app.cli.progress import progress_callback
    from llm.specs import ModelSpec
    from study.conflicts.score import judge_conflict_run
    from study.conflicts.sharded import judge_conflicts_sharded

    failed = requested = 0
    judges = [ModelSpec.parse(j) for j in judge]  # every judge's spec before any is asked
    for j in judges:
        runner = executor_for(ctx, executor, address, model=j)
        with session_for(ctx) as session, progress_callback(f"judging with {j}") as bar:
            s = here_or_sharded(
                ctx,
                runner,
                judge_conflict_run,
                judge_conflicts_sharded,
                run,
                j,
                session=session,
                concurrency=concurrency,
                per_shard=shard_banks,
                progress=bar,
                allow_self_judging=allow_self_judging,
            )
        _out.print(
            f"{s.judge}: {s.requested} answer(s) judged now ({s.ok} ok, {s.repaired} repaired, "
            f"{s.errors} unreadable after one repair, {s.failed} failed at the endpoint); "
            f"{s.skipped} already scored.",
            markup=False,
        )
        if s.repeat_warning:
            _out.print(f"Warning: {s.repeat_warning}", markup=False, highlight=False)
        failed, requested = failed + s.failed, requested + s.requested
    # every judge is asked first; then one rule for all: exit 3 with the cause
    exit_if_failed(RequestFailures(failed, requested))


@conflicts_app.command("policy")
def policy_cmd(
    ctx: typer.Context,
    policy: str = typer.Argument(
        ...,
        help="recency, majority, source-priority, ask-only, conditionalize-only, "
        "lexical-detector or caap.",
    ),
    run: str = typer.Option(..., "--run", help="Run name for the policy's answers."),
    backbone: str | None = typer.Option(None, "--backbone", help="Model for caap (both stages)."),
    distractors: str = typer.Option("6", "--distractors", help="Doses: 6, 0,6 or 0..6."),
    seed: int = typer.Option(0, "--seed", help="Run seed (shuffles and sampling)."),
) -> None:
    """Answer every bank with a heuristic baseline or the two-stage action policy."""
    from app.cli.context import session_for
    from llm.specs import ModelSpec
    from study.conflicts.plan import parse_doses
    from study.conflicts.policy import run_policy

    backbone_spec = None if backbone is None else ModelSpec.parse(backbone)
    with session_for(ctx) as session:
        s = run_policy(
            policy,
            run,
            session=session,
            backbone=backbone_spec,
            doses=parse_doses(distractors),
            seed=seed,
        )
    _out.print(
        f"Policy {s.policy} → run {s.run}: {s.planned} planned, {s.already_done} already stored, "
        f"{s.written} written now, {s.select_errors} unreadable action choices; "
        f"actions {s.actions}; lexical detections {s.detected}.",
        markup=False,
    )


@conflicts_app.command("report")
def report_cmd(
    ctx: typer.Context,
    run: list[str] = typer.Option(..., "--run", help="Oracle-track run (repeat for several)."),
    pipeline: list[str] = typer.Option([], "--pipeline", help="Pipeline-track run(s)."),
    policy: list[str] = typer.Option([], "--policy", help="Policy run(s)."),
    baseline: list[str] = typer.Option(
        [], "--baseline", help="No-memory run(s) (generate --track no-memory)."
    ),
    out: Path = typer.Option(..., "--out", help="Folder for the report files."),
    bootstrap: int = bootstrap_option(2000, short=False),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
) -> None:
    """Score table with CIs, D6 flags, distractor curve, judge agreement, track gap."""
    from app.cli.context import session_for
    from study.conflicts.calibrated import calibrated_lines
    from study.conflicts.report import build_report

    with session_for(ctx) as session:
        rep = build_report(
            run,
            pipeline_runs=pipeline,
            policy_runs=policy,
            baseline_runs=baseline,
            session=session,
            out_dir=out,
            bootstrap=bootstrap,
            seed=seed,
        )
    print_stats(rep.stats.to_dict())
    for line in rep.headline:  # read against the no-memory baseline
        _out.print(line, markup=False)
    for line in calibrated_lines(rep.calibrated):  # the pulled human slice, where there is one
        _out.print(line, markup=False, highlight=False)
    for line in rep.notice_lines():
        _out.print(line, markup=False, highlight=False)
    for name, path in rep.files.items():
        _out.print(f"{name}: {path}", markup=False)


@conflicts_app.command("show")
def show_cmd(
    ctx: typer.Context,
    run: str = typer.Option(..., "--run", help="A stored conflicts run."),
    limit: int = SHOW_LIMIT_OPTION,
    bank: str | None = typer.Option(None, "--bank", help="Only this bank's id."),
) -> None:
    """Print a run's stored answers with every rubric judge's scores (D1-D5) and reason."""
    from app.cli.context import session_for
    from app.cli.transcripts import print_transcripts
    from study.transcripts import run_transcripts

    with session_for(ctx) as session:
        shown, total = run_transcripts(run, session=session, limit=limit, question=bank)
    print_transcripts(_out, run, shown, total)


@conflicts_app.command("study")
def study_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Response model, provider/model."),
    run: str = typer.Option(..., "--run", help="Run name (rerun the same name to resume)."),
    judge: list[str] = typer.Option(..., "--judge", help="Judge model (repeat for several)."),
    distractors: str = typer.Option("0,6", "--distractors", help="Doses: 6, 0,6 or 0..6."),
    samples: int = typer.Option(1, "--samples", min=1, help="Samples per bank and dose."),
    policy: list[str] = typer.Option(
        [], "--policy", help="Also answer with this policy (repeatable; caap uses --model)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Report folder (default: the run's)."),
    bootstrap: int = bootstrap_option(2000, short=False),
    seed: int | None = typer.Option(None, "--seed", help="Run seed (default: from the name)."),
    concurrency: int = typer.Option(16, "--concurrency", min=1, help="Requests in flight."),
    baseline: bool = typer.Option(
        False,
        "--baseline",
        help="Also answer with no memory (run <run>-policy-no-memory), judged alike.",
    ),
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
    max_tokens: int = typer.Option(600, "--max-tokens", min=1, help="Answer token limit."),
) -> None:
    """Answer every stored bank, run the policies, judge every answer, write the report."""
    from contextlib import ExitStack

    from app.cli.context import session_for, settings
    from app.cli.progress import progress_callback
    from llm.specs import ModelSpec
    from study.conflicts.plan import parse_doses
    from study.conflicts.setup import ConflictStudy, report_folder, run_conflict_study

    study = ConflictStudy(
        run=run,
        model=ModelSpec.parse(model),
        judges=tuple(ModelSpec.parse(j) for j in judge),
        doses=parse_doses(distractors),
        samples=samples,
        policies=tuple(policy),
        seed=seed,
        bootstrap=bootstrap,
        concurrency=concurrency,
        baseline=baseline,
        allow_self_judging=allow_self_judging,
        max_tokens=max_tokens,
    )
    target = out or report_folder(settings(ctx).workspace, run)
    with ExitStack() as stack, session_for(ctx) as session:
        rep = run_conflict_study(
            study,
            session=session,
            out_dir=target,
            stage=lambda name: stack.enter_context(progress_callback(name)),
        )
    print_stats(rep.stats.to_dict())
    for line in rep.notice_lines():
        _out.print(line, markup=False, highlight=False)
    _out.print(f"Report: {rep.files['report_html']}", markup=False)


@conflicts_app.command("demo")
def demo_cmd(
    ctx: typer.Context,
    bootstrap: int = bootstrap_option(2000, short=False),
) -> None:
    """The instrument end to end on the simulator (offline, no keys, seconds)."""
    from app.cli.context import session_for, settings
    from app.cli.demo_cmds import print_next, print_outcome

    conf = settings(ctx)
    with session_for(ctx) as session:
        outcome = run_conflicts_demo_cli(
            session=session, workspace=conf.workspace, bootstrap=bootstrap
        )
    print_outcome(outcome)
    # its own report is "the report" here; the main demo lists it by the instrument's name
    report = DemoReport("open the report", outcome.reports[0].path)
    print_next(
        [replace(outcome, reports=(report,))],
        [("open the case viewer", f".venv/bin/driftlens --workspace {conf.workspace} app")],
    )


def run_conflicts_demo_cli(
    *,
    session: Any,
    workspace: Path,
    bootstrap: int = 2000,
    samples: int | None = None,
    stage: Stage | None = None,
) -> DemoOutcome:
    """Run the conflicts demo and say what it did (its report, its summary lines).

    Shared by ``driftlens conflicts demo`` and the main ``driftlens demo`` (its
    ``cli_demo``). The demo's banks fix its samples, and it draws no progress bar, so
    ``samples`` and ``stage`` are not used.
    """
    from storage.safe_text import escape_control
    from study.conflicts.demo import run_conflicts_demo

    del samples, stage
    res = run_conflicts_demo(
        session=session, out_dir=workspace / "reports" / "conflicts", bootstrap=bootstrap
    )
    rep = res.report
    lines = [
        f"Banks: {res.banks.total} ({res.banks.inserted} new). Answers generated now: "
        f"{sum(g.requested for g in res.generation)}; judged now: "
        f"{sum(j.requested for j in res.judging)} "
        f"({sum(j.repaired for j in res.judging)} repaired, "
        f"{sum(j.errors for j in res.judging)} unreadable).",
        "Lowest dimension is D4 (clarification) for every model and judge: "
        + ("yes" if rep.d4_lowest_everywhere else "no"),
    ]
    lines += [
        escape_control(
            f"Distractors {e.from_}→{e.to} ({e.judge}): total {e.mean_diff:+.2f} "
            f"[{e.ci_low:+.2f}, {e.ci_high:+.2f}], MDD {e.mdd:.2f}"
        )
        for e in rep.stats.distractor_effect
        if e.model == "all"
    ]
    return DemoOutcome(
        title="Memory conflicts",
        banner="memory conflicts: simulated response models and judges.",
        lines=tuple(lines),
        reports=(DemoReport("memory conflicts", Path(rep.files["report_html"]).resolve()),),
    )


@conflicts_app.command("dialogues")
def dialogues_cmd(
    ctx: typer.Context,
    file: Path | None = typer.Argument(None, help="Dialogue JSONL (default: the shipped sample)."),
    system: str = typer.Option("sim-dialogue", "--system", help="Memory system to run."),
    seed: int = typer.Option(0, "--seed", help="Extraction seed."),
) -> None:
    """Validate dialogues against the imported banks and show what a memory system keeps."""
    from app.cli.context import session_for
    from study.conflicts.dialogues import read_dialogues
    from study.conflicts.items import stored_instances
    from study.conflicts.tracks import extract_bank, get_extractor

    with session_for(ctx) as session:
        instances = dict((i.instance_id, i) for _, i in stored_instances(session=session))
    dset = read_dialogues(file, instances.values())
    ext = get_extractor(system)
    table = Table(title=f"{system} on {dset.source} (seed {seed})")
    for col in ("instance", "sessions", "user turns", "kept memories", "label"):
        table.add_column(col)
    for iid, d in dset.by_instance.items():
        inst = instances[iid]
        bank = extract_bank(ext, inst, seed=seed, dialogue=d)
        turns = sum(1 for s in d.sessions for t in s.turns if t.role == "user")
        table.add_row(
            Text(iid),
            str(len(d.sessions)),
            str(turns),
            f"{len(bank.memories)} of {len(inst.core_memories)}",
            bank.observability,
        )
    _out.print(table)


@conflicts_app.command("observe")
def observe_cmd(
    ctx: typer.Context,
    run: str = typer.Option(..., "--run", help="Pipeline-track run."),
    judge: list[str] = typer.Option(..., "--judge", help="Observability judge (repeatable)."),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
) -> None:
    """Label each extracted bank FULL / PARTIAL / None with an LLM observability judge."""
    from app.cli.context import session_for
    from app.cli.progress import progress_callback
    from llm.specs import ModelSpec
    from study.conflicts.observability import judge_observability_run

    for j in [ModelSpec.parse(text) for text in judge]:
        with session_for(ctx) as session, progress_callback(f"observability with {j}") as bar:
            s = judge_observability_run(
                run, j, session=session, concurrency=concurrency, progress=bar
            )
        _out.print(
            f"{s.judge}: {s.requested} bank(s) labelled now ({s.ok} ok, {s.repaired} repaired, "
            f"{s.errors} unreadable after one repair, stored and flagged; {s.failed} failed at "
            f"the endpoint); {s.skipped} already labelled.",
            markup=False,
        )


@conflicts_app.command("observability")
def observability_cmd(
    ctx: typer.Context,
    run: str = typer.Option(..., "--run", help="Pipeline-track run."),
    as_json: bool = JSON_OPTION,
) -> None:
    """FULL / PARTIAL / None shares per labeller and agreement: extractor, LLM judges, humans."""
    from dataclasses import asdict

    from app.cli.context import session_for
    from study.conflicts.observability import observability_report

    with session_for(ctx) as session:
        rep = observability_report(run, session=session)
    if as_json:
        data = asdict(rep)
        typer.echo(json.dumps(data, indent=2, default=str))
        return
    _out.print(
        f"Run {rep.run}: {rep.banks} extracted bank(s), memory system {rep.memory_system}.",
        markup=False,
    )
    shares = Table(title="observability shares (k, 95% Wilson interval)")
    for col in ("labeller", "FULL", "PARTIAL", "None"):
        shares.add_column(col)
    for name, by_label in rep.shares.items():
        shares.add_row(
            Text(name),
            *(
                f"{k} [{fixed(lo)}, {fixed(hi)}]"
                for k, lo, hi in (by_label[lab] for lab in ("FULL", "PARTIAL", "None"))
            ),
        )
    _out.print(shares)
    agree = Table(title="agreement between labellers")
    for col in ("rater A", "rater B", "banks", "exact", "Cohen's kappa"):
        agree.add_column(col)
    for a in rep.agreement:
        agree.add_row(Text(a.rater_a), Text(a.rater_b), str(a.n), fixed(a.exact), fixed(a.kappa))
    _out.print(agree)
