"""The ``disposition`` command group: the disposition drift instrument (seed 001)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from app.cli.console import SafeConsole, fmt_p
from app.cli.disposition_batteries_cmds import batteries_app, read_batteries_arg
from app.cli.executor_args import ADDRESS_OPTION, EXECUTOR_OPTION, executor_for, here_or_sharded
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
from llm.specs import ModelSpec
from study.request_failures import RequestFailures

# a pipe or file gets a wide table instead of rich's 80-column default
_out = SafeConsole(highlight=False, width=None if os.isatty(1) else 160)

disposition_app, register = command_group(
    "disposition",
    (
        "Disposition drift across model versions: aligned rates of arms against a reference "
        "arm, with stem-bootstrap intervals, null test, MDD and equivalence bounds."
    ),
)


def _f(x: Any, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def render_stats(result: dict[str, Any]) -> None:
    """Print one table per battery plus the null-test summary and noise shares."""
    meta = result["meta"]
    for battery, b in result["batteries"].items():
        table = Table(
            title=(
                f"{escape(battery)} — drift vs {escape(meta['reference'])} (pp); primary "
                f"interval: {meta['primary_interval']}, B = {meta['bootstrap']}, "
                f"bound ±{meta['bound_pp']:g} pp"
            ),
            title_justify="left",
        )
        for col in (
            "arm",
            "aligned",
            "drift",
            "95% CI",
            "plain 95% CI",
            "SE",
            "MDD",
            "equiv.",
            "within",
            "p adj",
            "stems",
            "n",
            "missing",
        ):
            table.add_column(col, justify="left" if col == "arm" else "right")
        for arm, a in b["arms"].items():
            ci = f"[{_f(a['ci_low'])}, {_f(a['ci_high'])}]" if a["ci_low"] is not None else "–"
            plain = (
                f"[{_f(a['ci_plain_low'])}, {_f(a['ci_plain_high'])}]"
                if a["ci_plain_low"] is not None
                else "–"
            )
            within = {None: "–", True: "yes", False: "NO"}[a["within_bound"]]
            table.add_row(
                escape(arm),
                f"{100 * a['aligned_rate']:.1f}%" if a["aligned_rate"] is not None else "–",
                _f(a["drift_pp"]),
                ci,
                plain,
                _f(a["se"], 2),
                _f(a["mdd"]),
                _f(a["equivalence_bound"]),
                within,
                fmt_p(a["p_adjusted"]),
                str(a["n_stems"]),
                str(a["n_responses"]),
                str(a["n_missing"]),
            )
        _out.print(table)
        null = b["null_test"]
        if null:
            k = sum(1 for v in null.values() if v["excludes_zero"])
            _out.print(
                f"  null test (sample 1 vs 2): {k} of {len(null)} arms exclude 0, expected ≈ 5%"
            )

        def shares(block: dict[str, Any]) -> str:
            return ", ".join(
                f"{k.replace('_', '-')} {'–' if v is None else f'{100 * v:.0f}%'}"
                for k, v in block.items()
            )

        _out.print("  noise shares: " + shares(b["noise"]))
        if b.get("noise_paired"):
            _out.print(
                "  what a paired drift feels (the probe main effect cancels): "
                + shares(b["noise_paired"])
            )


def _fail(exc: BaseException, path: Path) -> typer.Exit:
    from app.cli.errors import report_user_error
    from storage.errors import DriftLensError

    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
        exc = DriftLensError(f"{exc.filename or path}: {exc.strerror or exc}")
    return typer.Exit(report_user_error(exc, debug=False))


@disposition_app.command("stats")
def stats_cmd(
    table: Path = typer.Argument(
        ...,
        help="CSV with columns battery, stem, probe, arm, sample, aligned [, classifier_repeat].",
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the results as JSON here."),
    reference: str | None = typer.Option(
        None,
        "--reference",
        help="Reference arm (default: an arm named 'reference', else the first).",
    ),
    bootstrap: int = bootstrap_option(10_000, help="Stem resamples"),
    seed: int | None = RANDOM_SEED_OPTION,
    bound: float | None = typer.Option(
        None,
        "--bound",
        min=0.0,
        help="Equivalence bound: percentage points (default 5), or scale points with --graded "
        "(default 0.3).",
    ),
    graded: bool = typer.Option(
        False, "--graded", help="The aligned column holds graded 1–7 scores, not 1/0."
    ),
) -> None:
    """Aligned rates, drift vs the reference arm, null test and noise shares of a rate table."""
    from storage.errors import DriftLensError
    from study.disposition.analysis import analyze_rates, read_rate_table

    try:
        df = read_rate_table(table, scores=graded)
        default_bound = 0.3 if graded else 5.0
        result = analyze_rates(
            df,
            reference=reference,
            n_boot=bootstrap,
            seed=seed,
            bound_pp=default_bound if bound is None else bound,
            scores=graded,
        ).to_dict()
        if json_out is not None:
            write_json(json_out, result)
    except (DriftLensError, ValueError, OSError) as exc:
        if os.environ.get("DRIFTLENS_DEBUG") == "1":
            raise
        raise _fail(exc, table) from None
    render_stats(result)
    if json_out is not None:
        _out.print(f"Wrote {json_out}")


arms_app = typer.Typer(name="arms", help="Arms of a disposition study.", no_args_is_help=True)
disposition_app.add_typer(arms_app, name="arms")
disposition_app.add_typer(batteries_app, name="batteries")


@arms_app.command("add")
def arms_add_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Arm name (unique within the study)."),
    model: str = typer.Option(..., "--model", help="Model spec, e.g. openai-api/vllm/Qwen3-8B."),
    study: str = typer.Option("default", "--study", help="Study the arm belongs to."),
    role: str = typer.Option("treatment", "--role", help="reference, control or treatment."),
    dose: float | None = typer.Option(None, "--dose", help="Dose: % harmful training answers."),
    train_seed: int | None = typer.Option(None, "--train-seed", help="Training seed."),
    training_set_hash: str | None = typer.Option(None, "--training-set-hash"),
    reasoning: str = typer.Option("on", "--reasoning", help="on, off, budget:N or filler:N."),
    server_instance: str | None = typer.Option(None, "--server-instance"),
    samples: int = typer.Option(2, "--samples", help="Samples per probe (≥ 2)."),
    max_reasks: int = typer.Option(3, "--max-reasks", help="Re-asks of exhausted answers."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Token limit per reply."),
    budget_route: str = typer.Option(
        "auto",
        "--budget-route",
        help="budget:N arms: auto (vLLM's server-side budget on vLLM endpoints, else "
        "two client-side phases), server (try it everywhere) or client.",
    ),
    replace: bool = typer.Option(False, "--replace", help="Change an arm without responses."),
) -> None:
    """Add an arm: one model with its recorded metadata."""
    from app.cli.context import session_for
    from study.disposition.runs import ArmSpec, add_arms

    spec = ArmSpec(
        name=name,
        model=ModelSpec.parse(model),
        role=role,
        dose=dose,
        train_seed=train_seed,
        training_set_hash=training_set_hash,
        reasoning=reasoning,
        server_instance=server_instance,
        samples=samples,
        max_reasks=max_reasks,
        max_tokens=max_tokens,
        budget_route=budget_route,
    )
    with session_for(ctx) as session:
        add_arms(study, [spec], session=session, replace=replace)
    _out.print(f"Added arm {escape(name)} to study {escape(study)}.")


@arms_app.command("list")
def arms_list_cmd(
    ctx: typer.Context,
    study: str | None = typer.Option(None, "--study", help="Only this study."),
    json_out: bool = JSON_OPTION,
) -> None:
    """List arms with their metadata."""
    from app.cli.context import session_for
    from app.cli.output import echo_json
    from storage.repo.disposition import list_arms

    with session_for(ctx) as session:
        arms = list_arms(session=session, study=study)
        rows: list[dict[str, Any]] = [
            {
                "study": a.study,
                "name": a.name,
                "model": a.model,
                "role": a.role,
                "dose": a.dose,
                "train_seed": a.train_seed,
                "reasoning": a.reasoning + (f":{a.budget}" if a.budget is not None else ""),
                "server_instance": a.server_instance,
                "samples": a.samples,
            }
            for a in arms
        ]
    if json_out:
        echo_json(rows)
        return
    table = Table(title="Disposition arms", title_justify="left")
    for col in ("study", "name", "model", "role", "dose", "reasoning", "server"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            escape(r["study"]),
            escape(r["name"]),
            escape(r["model"]),
            r["role"],
            "–" if r["dose"] is None else f"{r['dose']:g}",
            escape(r["reasoning"]),
            escape(r["server_instance"] or "–"),
        )
    _out.print(table)


@disposition_app.command("run")
def run_cmd(
    ctx: typer.Context,
    study: str = typer.Option("default", "--study"),
    judge: str = typer.Option(..., "--judge", help="Classifier model spec (temperature 0)."),
    batteries: Path | None = typer.Option(None, "--batteries", help="YAML/CSV (default: sample)."),
    arm: list[str] | None = typer.Option(None, "--arm", help="Only these arms (repeatable)."),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
    repeat_share: float = typer.Option(0.1, "--repeat-share", min=0.0, max=1.0),
    grade_share: float = typer.Option(
        0.0, "--grade-share", min=0.0, max=1.0, help="Share of answers for the 1–7 review."
    ),
    awareness_share: float = typer.Option(
        0.0,
        "--awareness-share",
        min=0.0,
        max=1.0,
        help="Share of answers the judge rates for test awareness (1–7).",
    ),
    report: Path | None = typer.Option(
        None, "--report", help="Then analyse into this folder (as `disposition analyze --out`)."
    ),
    bootstrap: int = bootstrap_option(10_000, help="Stem resamples of --report"),
    executor: str | None = EXECUTOR_OPTION,
    address: str | None = ADDRESS_OPTION,
    shard_stems: int = typer.Option(
        25, "--shard-stems", min=1, help="Stems per shard (of one arm) with --executor."
    ),
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
) -> None:
    """Generate every arm's answers (with re-asks) and classify them; resumes when re-run.

    With ``--report DIR`` the study is analysed afterwards and its report written there,
    so one command (one background job of the app) takes a study from arms to results.
    With ``--executor`` each arm's stems are cut into shards (``--shard-stems`` each).
    """
    from contextlib import ExitStack

    from app.cli.context import session_for
    from app.cli.progress import progress_callback
    from storage.repo.disposition import list_arms
    from study.disposition.runs import run_study
    from study.disposition.sharded import run_study_sharded

    judge_spec = ModelSpec.parse(judge)  # before the session: a bad spec stores nothing
    docs = read_batteries_arg(batteries)
    with ExitStack() as stack, session_for(ctx) as session:
        # the arms' stored specs are text: read back, each is parsed once here
        models = [ModelSpec.parse(a.model) for a in list_arms(session=session, study=study)]
        vllm = next((m for m in models if m.in_process_engine), None)
        runner = executor_for(ctx, executor, address, model=vllm)
        gens, scores = here_or_sharded(
            ctx,
            runner,
            run_study,
            run_study_sharded,
            study,
            docs,
            session=session,
            per_shard=shard_stems,
            judge=judge_spec,
            arms=arm or None,
            concurrency=concurrency,
            repeat_share=repeat_share,
            grade_share=grade_share,
            awareness_share=awareness_share,
            stage=lambda name: stack.enter_context(progress_callback(name)),
            on_plan=lambda line: _out.print(line, markup=False),
            allow_self_judging=allow_self_judging,
        )
    for g in gens:
        _out.print(
            f"{escape(g.arm)}: {g.planned} planned, {g.already_done} stored before, "
            f"{g.answered} answered, {g.exhausted} exhausted after re-asks, {g.errors} errors, "
            f"{g.reasks} re-asks, {g.flagged_reasoning} reasoning-off answers with a "
            "reasoning block" + (f"; budget route: {g.budget_route}" if g.budget_route else "")
        )
        if g.budget_note:
            _out.print(f"  {escape(g.budget_note)}")
    _out.print(
        f"Classifier {escape(scores.judge_model)}: {scores.scored} scored "
        f"({scores.repaired} repaired), {scores.errors} unparseable, "
        f"{scores.failed_requests} failed requests, {scores.repeat_cases} scored twice."
    )
    kinds: dict[str, int] = {}
    for g in gens:
        for k, n in g.failed_kinds.items():
            kinds[k] = kinds.get(k, 0) + n
    if scores.failed_requests:
        kinds["classifier"] = scores.failed_requests
    # one rule for all (as generate): failed requests exit 3 with the cause
    exit_if_failed(
        RequestFailures(
            failed=sum(g.errors for g in gens) + scores.failed_requests,
            requested=sum(g.requested for g in gens)
            + scores.scored
            + scores.errors
            + scores.failed_requests,
            kinds=kinds,
        )
    )
    # the report only of a study whose requests all came back
    if report is not None:
        _analyze_into(ctx, study, report, bootstrap=bootstrap, seed=0, bound=5.0, plan=None)


@disposition_app.command("awareness")
def awareness_cmd(
    ctx: typer.Context,
    judge: str = typer.Option(..., "--judge", help="Judge model spec (temperature 0)."),
    study: str = typer.Option("default", "--study"),
    arm: list[str] | None = typer.Option(None, "--arm", help="Only these arms (repeatable)."),
    share: float = typer.Option(
        1.0, "--share", min=0.0, max=1.0, help="Seeded share of the answers to rate."
    ),
    seed: int = typer.Option(2, "--seed", help="Seed of the --share sample."),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
    min_ratings: int = typer.Option(
        2, "--min-ratings", min=1, help="Human ratings an answer needs for the agreement."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the summary as JSON here."),
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
) -> None:
    """Rate the answers' test awareness (1-7 + none/implicit/explicit) with an LLM judge."""
    from app.cli.context import session_for
    from app.cli.progress import progress_callback
    from storage.errors import InputError
    from storage.repo.disposition import require_arms
    from study.disposition.awareness import awareness_summary, rate_awareness

    judge_spec = ModelSpec.parse(judge)  # before the session: a bad spec stores nothing
    with session_for(ctx) as session:
        rows = require_arms(study, session=session)
        if arm:
            unknown = sorted(set(arm) - {a.name for a in rows})
            if unknown:
                raise InputError(f"Study {study!r} has no arm {unknown[0]!r}.")
            rows = [a for a in rows if a.name in arm]
        from study.disposition.roles import judge_roles
        from study.run_setup import run_lease

        judge_roles(
            study,
            rows,
            str(judge_spec),
            roles=("awareness judge",),
            session=session,
            allow_self=allow_self_judging,
        )

        # the study's one lease: a second process (or a concurrent run) would ask again
        what = f"Disposition study {study!r}"
        with (
            run_lease(f"disposition_run:{study}", session=session, what=what),
            progress_callback("rating awareness") as update,
        ):
            run = rate_awareness(
                rows, judge=judge_spec, session=session, share=share, seed=seed,
                concurrency=concurrency, progress=update,
            )  # fmt: skip
        summary = awareness_summary(
            study, session=session, judge=str(judge_spec), min_ratings=min_ratings
        )
    _out.print(
        f"Awareness judge {escape(run.judge_model)}: {run.scored} rated now "
        f"({run.repaired} repaired), {run.errors} malformed (stored, flagged), "
        f"{run.failed_requests} failed requests, {run.already_scored} rated before."
    )
    if summary is not None:
        render_awareness(summary)
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            payload = {"run": vars(run), **summary.to_dict()}
            json_out.write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")
            _out.print(f"Wrote {escape(str(json_out))}")
    requested = run.scored + run.errors + run.failed_requests
    exit_if_failed(RequestFailures(run.failed_requests, requested))


def render_awareness(summary: Any) -> None:
    """The awareness judge's per-arm table and its agreement with the human study."""
    from study.disposition.awareness import agreement_line, awareness_frame_rows

    rows = awareness_frame_rows(summary)
    table = Table(
        title=(
            f"Test awareness rated 1-7 by {escape(summary.judge_model)} (mean: 95% CI over "
            "stems; share rated 5+: Wilson 95% CI)"
        ),
        title_justify="left",
    )
    for col in rows[0] if rows else ():
        table.add_column(col.replace("_", " "), justify="left" if col == "arm" else "right")
    for r in rows:
        table.add_row(*(escape(str(v)) for v in r.values()))
    _out.print(table)
    _out.print(escape(agreement_line(summary)))


@disposition_app.command("show")
def show_cmd(
    ctx: typer.Context,
    study: str = typer.Option(..., "--study", help="The study whose answers to print."),
    arm: str | None = typer.Option(None, "--arm", help="Only this arm's answers."),
    stem: str | None = typer.Option(None, "--stem", help="Only this stem (battery/stem)."),
    limit: int = SHOW_LIMIT_OPTION,
) -> None:
    """Print a study's stored answers with every classifier's category and reason."""
    from app.cli.context import session_for
    from study.disposition.transcripts import study_answers

    with session_for(ctx) as session:
        shown, total = study_answers(study, session=session, arm=arm, stem=stem, limit=limit)
    _out.print(f"Study {study}: {len(shown)} of {total} answers.", markup=False)
    for a in shown:
        lines = [
            "",
            f"{a.arm} · {a.battery}/{a.stem} · paraphrase {a.paraphrase} · sample {a.sample} "
            f"· {a.status}",
            f"  probe: {a.probe}",
            f"  answer: {a.answer}" if a.answer is not None else f"  reply: {a.text or ''}",
        ]
        for v in a.verdicts:
            again = f" #{v.repeat + 1}" if v.repeat else ""
            label = v.label or f"unparsed ({v.parse_status})"
            lines.append(f"  {v.judge}{again}: {label}" + (f" ({v.reason})" if v.reason else ""))
        for line in lines:
            _out.print(line, markup=False, soft_wrap=True)


@disposition_app.command("analyze")
def analyze_cmd(
    ctx: typer.Context,
    study: str = typer.Option("default", "--study"),
    out: Path = typer.Option(Path("disposition-report"), "--out", help="Output folder."),
    bootstrap: int = bootstrap_option(10_000, help="Stem resamples"),
    seed: int = typer.Option(0, "--seed"),
    bound: float = typer.Option(5.0, "--bound", min=0.0),
    plan_file: Path | None = typer.Option(
        None, "--plan", help="Pre-registered analysis plan (YAML): its bound wins over --bound."
    ),
) -> None:
    """Analyse a stored study: rate tables, statistics per reasoning group, report."""
    from study.disposition.prereg import read_plan

    plan = read_plan(plan_file) if plan_file is not None else None
    _analyze_into(ctx, study, out, bootstrap=bootstrap, seed=seed, bound=bound, plan=plan)


def _analyze_into(
    ctx: typer.Context,
    study: str,
    out: Path,
    *,
    bootstrap: int,
    seed: int,
    bound: float,
    plan: Any,
) -> None:
    """Analyse ``study`` and write its report folder ``out`` (``analyze``, ``run --report``)."""
    from app.cli.context import session_for
    from study.disposition.analysis import analyze_study
    from study.disposition.report import write_disposition_report
    from study.disposition.runs import write_analysis
    from study.report.folder import final_paths, staged_report_folder

    with session_for(ctx) as session:
        analysis = analyze_study(
            study,
            session=session,
            n_boot=bootstrap,
            seed=seed,
            bound_pp=plan.bound_pp if plan is not None else bound,
        )
    # The folder is replaced as a whole: a killed command leaves the previous report.
    with staged_report_folder(out) as work:
        written = write_analysis(analysis, work)
        written.update(write_disposition_report(analysis, work, plan=plan))
    files = final_paths(written, work, out)
    for g in analysis.groups:
        render_stats(g.stats.to_dict())
    from study.disposition.calibrated import calibrated_lines

    for line in calibrated_lines(analysis.calibrated):
        _out.print(line, markup=False)
    for a in analysis.arms.values():
        _out.print(
            f"Arm {a.name}: {a.unscored_line} (classifier replies that did not parse; "
            "excluded from the rate).",
            markup=False,
            highlight=False,
        )
    for line in analysis.roles:
        _out.print(line, markup=False, highlight=False)
    _out.print(f"Report: {files['report_html'].resolve()}")


@disposition_app.command("demo")
def demo_cmd(
    ctx: typer.Context,
    bootstrap: int = bootstrap_option(10_000, short=False, help="Stem resamples"),
) -> None:
    """A whole disposition study on the simulator (offline, known doses) and its report."""
    from contextlib import ExitStack

    from app.cli.context import session_for, settings
    from app.cli.demo_cmds import print_outcome
    from app.cli.progress import progress_callback
    from study.disposition.demo import run_disposition_demo

    conf = settings(ctx)
    out_dir = conf.workspace / "reports" / "disposition-demo"
    with ExitStack() as stack, session_for(ctx) as session:
        result = run_disposition_demo(
            session=session,
            out_dir=out_dir,
            bootstrap=bootstrap,
            stage=lambda name: stack.enter_context(progress_callback(name)),
        )
    print_outcome(demo_outcome(result))


def run_disposition_demo_cli(
    *, session: Any, workspace: Path, bootstrap: int, samples: int, stage: Stage
) -> DemoOutcome:
    """The disposition demo as the main ``driftlens demo`` runs it (its ``cli_demo``).

    The demo study fixes its own samples per probe, so ``samples`` is not used.
    """
    from study.disposition.demo import run_disposition_demo

    del samples
    result = run_disposition_demo(
        session=session,
        out_dir=workspace / "reports" / "disposition-demo",
        bootstrap=bootstrap,
        stage=lambda name: stage(f"disposition {name}"),
    )
    return demo_outcome(result)


def demo_outcome(result: Any) -> DemoOutcome:
    """The demo's summary: the answers and re-asks, per-group drift of self-interest, files.

    Plain lines: the study, group and arm names are escaped of control characters.
    """
    from storage.safe_text import escape_control

    answered = sum(g.answered for g in result.generation)
    exhausted = sum(g.exhausted for g in result.generation)
    reasks = sum(g.reasks for g in result.generation)
    lines = [
        escape_control(
            f"Disposition study {result.study}: {len(result.generation)} arms, "
            f"{answered} answers now, {reasks} re-asks, {exhausted} exhausted after 3 re-asks; "
            f"classifier scored {result.scoring.scored} ({result.scoring.repeat_cases} twice)."
        )
    ]
    for g in result.analysis.groups:
        b = g.stats.to_dict()["batteries"]
        first = next(iter(b))
        cells = [
            f"{arm} {a['drift_pp']:+.1f}"
            for arm, a in b[first]["arms"].items()
            if arm != g.reference
        ]
        lines.append(
            escape_control(
                f"  {g.group} · {first} drift vs {g.reference} (pp): " + ", ".join(cells)
            )
        )
    html = Path(result.files["report_html"]).resolve()
    lines.append(escape_control(f"Disposition report: {html}"))
    return DemoOutcome(
        title="Disposition drift",
        banner="every answer comes from the built-in disposition simulator (known doses).",
        lines=tuple(lines),
        reports=(DemoReport("disposition drift", html),),
    )
