"""The ``sources`` command group: source reliance (own answer vs user vs document)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from app.cli.console import SafeConsole, fmt_num, term
from app.cli.executor_args import ADDRESS_OPTION, EXECUTOR_OPTION, executor_for, sharded_pass
from app.cli.failures import exit_if_failed
from app.cli.groups import command_group
from app.cli.options import RANDOM_SEED_OPTION, SHOW_LIMIT_OPTION
from app.cli.output import write_json
from app.cli.request_limits import bootstrap_option, bounded_option
from app.cli.sources_stats import render_stats
from driftlens_plugins import DemoOutcome, DemoReport, Stage
from llm.specs import ModelSpec, spec_simulated
from study.limits import SFT_EXAMPLES
from study.request_failures import RequestFailures

_out = SafeConsole(highlight=False, width=None if os.isatty(1) else 150)

sources_app, register = command_group(
    "sources",
    (
        "Source reliance: does the model keep its own correct answer against a user or a "
        "document, adopt a correct correction, and tell the two apart?"
    ),
)


def _fail(exc: BaseException, path: Path | None = None) -> typer.Exit:
    from app.cli.errors import report_user_error
    from storage.errors import DriftLensError

    if os.environ.get("DRIFTLENS_DEBUG") == "1":
        raise exc
    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
        exc = DriftLensError(f"{exc.filename or path}: {exc.strerror or exc}")
    return typer.Exit(report_user_error(exc, debug=False))


@sources_app.command("stats")
def stats_cmd(
    ctx: typer.Context,
    table: Path | None = typer.Argument(
        None,
        help=(
            "CSV probe table: model, dataset, tier, ordering, question_id, variant, choice, "
            "correct_choice, wrong_choice [, p_correct, p_wrong, p_other]."
        ),
    ),
    run_name: str | None = typer.Option(
        None, "--run", help="A stored run instead of a table (see `driftlens sources runs`)."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write the full results as JSON here."
    ),
    bootstrap: int = bootstrap_option(2000, help="Question-cluster bootstrap replicates"),
    seed: int | None = RANDOM_SEED_OPTION,
) -> None:
    """PAR±/SDR± with behaviour-type uncertainty, source odds ratios, KL and ΔNLL."""
    from storage.errors import DriftLensError

    try:
        from study.sources.analysis import analyze_sources_table
        from study.sources.table import read_sources_csv

        if (table is None) == (run_name is None):
            raise DriftLensError("Give either a probe table (TABLE.csv) or --run NAME.")
        if run_name is not None:
            df = _stored_table(ctx, run_name)
            source = f"run {run_name!r}"
        else:
            assert table is not None
            df = read_sources_csv(table)
            source = str(table)
        result = analyze_sources_table(df, bootstrap=bootstrap, seed=seed, source=source).to_dict()
        if json_out is not None:
            write_json(json_out, result)
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc, table) from None
    render_stats(result)
    if json_out is not None:
        _out.print(f"Wrote {term(json_out)}")


@sources_app.command("items")
def items_cmd(
    path: Path = typer.Argument(..., help="Items file (JSONL or CSV)."),
    fmt: str = typer.Option(
        "auto", "--format", help="auto, jsonl, csv, csqa (CommonsenseQA) or gsm8k-mc."
    ),
    dataset: str | None = typer.Option(None, "--dataset", help="Dataset name for items without."),
    out: Path | None = typer.Option(None, "--out", help="Write the items as our JSONL here."),
) -> None:
    """Validate a multiple-choice items file and show its answer balance per position."""
    from storage.errors import DriftLensError

    try:
        from study.sources.items import answer_balance, items_to_jsonl, read_items

        notes: list[str] = []
        items = read_items(path, fmt=fmt, dataset=dataset, notes=notes)
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(items_to_jsonl(items), encoding="utf-8")
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc, path) from None
    _out.print(f"{len(items)} items read from {term(path)}.")
    for note in notes[:3]:
        _out.print(f"  note: {term(note)}")
    if len(notes) > 3:
        _out.print(f"  note: {len(notes) - 3} more items repeat an earlier question text")
    for ds, shares in answer_balance(items).items():
        parts = ", ".join(f"{k} {v:.1%}" for k, v in shares.items())
        _out.print(f"  {term(ds)}: correct answer at {parts}")
    if out is not None:
        _out.print(f"Wrote {term(out)}")


def _stored_runs(ctx: typer.Context, name: str) -> list[Any]:
    """The stored run ``name`` (one SourcesRun per instruction)."""
    from app.cli.context import session_for
    from study.sources.store import load_sources_runs

    with session_for(ctx) as session:
        return load_sources_runs(name, session=session)


def _stored_table(ctx: typer.Context, name: str) -> Any:
    """The probe table of a stored run: the very table ``run`` writes as probes.csv."""
    from app.cli.context import session_for
    from study.sources.store import stored_run_table

    with session_for(ctx) as session:
        return stored_run_table(name, session=session)


def _finish_run(
    ctx: typer.Context, name: str, runs: list[Any], out_dir: Path, *, bootstrap: int,
    seed: int | None,
) -> None:  # fmt: skip
    """Write stored run ``name``'s folder (its claim writers' settings as provenance)."""
    import pandas as pd

    from app.cli.context import session_for
    from study.report.folder import staged_report_folder
    from study.safe_csv import write_frame_csv
    from study.sources.analysis import analyze_sources_table
    from study.sources.claim_provenance import claim_writer_settings, run_role_lines
    from study.sources.report import write_sources_report

    with session_for(ctx) as session:
        writers = claim_writer_settings(name, session=session)
        roles = run_role_lines(name, session=session)
    title = f"Source reliance — {runs[0].model if runs else name}"
    table = pd.concat([r.table() for r in runs], ignore_index=True)
    result = analyze_sources_table(table, bootstrap=bootstrap, seed=seed).to_dict()
    n = sum(len(r.records) for r in runs)
    unknown = sum(r.n_unknown for r in runs)
    failed = sum(r.n_errors for r in runs)
    # The folder is replaced as a whole: a killed command leaves the previous report.
    with staged_report_folder(out_dir) as work:
        write_frame_csv(table, work / "probes.csv")
        (work / "probes.jsonl").write_text("".join(r.jsonl() for r in runs), encoding="utf-8")
        (work / "stats.json").write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
        files = write_sources_report(
            result,
            table,
            work,
            title=title,
            simulated=spec_simulated(runs[0].model),
            notes=(
                f"{n} probes: {unknown} of {n} unscored (no letter read: stored as unknown, "
                f"left out of every estimate), {failed} failed requests.",
                *roles,
            ),
            claim_settings=writers,
        )
    render_stats(result)
    for line in roles:
        _out.print(line, markup=False, highlight=False)
    _out.print(
        f"{n} probes ({unknown} of {n} unscored, {failed} failed). "
        f"Wrote {term(out_dir / 'probes.csv')}, probes.jsonl, stats.json and "
        f"{term(out_dir / files.html.name)}"
    )


@sources_app.command("run")
def run_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", "-m", help="provider/model, or sim/src-<preset>."),
    items_path: Path | None = typer.Option(
        None, "--items", help="Items file (default: the shipped items)."
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Use the first N items."),
    tier: list[int] = typer.Option([1], "--tier", help="Assertion tier(s): 1, 2."),
    claims_path: Path | None = typer.Option(
        None, "--claims", help="Tier-2 claims JSONL ({id, claim})."
    ),
    claims_set: str | None = typer.Option(
        None, "--claims-set", help="Tier-2 claims from a stored claim set (see `sources claims`)."
    ),
    instruction: list[str] = typer.Option(
        ["n"], "--instruction", help="n, d (doc-only), u (user-only), s (self-only); repeatable."
    ),
    vocabulary: str = typer.Option("ours", "--vocabulary", help="ours or paper."),
    top_logprobs: int = typer.Option(20, "--top-logprobs", min=0, max=20),
    no_logprobs: bool = typer.Option(False, "--no-logprobs", help="Choice-only mode."),
    prefill: bool = typer.Option(
        True, "--prefill/--no-prefill", help="Read after an assistant 'Answer:' prefill."
    ),
    reasoning: bool = typer.Option(False, "--reasoning", help="Two-stage reasoning route."),
    max_tokens: int = typer.Option(
        2, "--max-tokens", min=1, help="Tokens generated per answer (the letter is the first)."
    ),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
    run_name: str | None = typer.Option(
        None,
        "--run",
        help="Name of the stored run (default: MODEL@HASH of the settings); the same name "
        "and settings resume it.",
    ),
    out_dir: Path | None = typer.Option(None, "--out", help="Output folder."),
    bootstrap: int = bootstrap_option(2000),
    seed: int | None = typer.Option(0, "--seed", help="Bootstrap seed of the statistics."),
    run_seed: int = typer.Option(
        0,
        "--run-seed",
        help="Generation seed: the sampling seed of every probe (a simulated model's "
        "instance); another seed is another run of the same model (a null replication).",
    ),
    executor: str | None = EXECUTOR_OPTION,
    address: str | None = ADDRESS_OPTION,
    shard_items: int = typer.Option(
        25, "--shard-items", min=1, help="Items per shard with --executor."
    ),
) -> None:
    """Probe a model with the 13 variants (bare first), store, read letters, analyse, report.

    Every probe is stored in the database as it arrives; a killed run resumes where it
    stopped when run again with the same settings (and --run name, if one was given).
    With ``--executor`` the items are cut into shards (``--shard-items`` each).
    """
    from app.cli.context import session_for, settings
    from app.cli.progress import progress_callback
    from storage.errors import DriftLensError
    from study.limits import CONCURRENCY

    try:
        from study.sources.items import read_items, shipped_items
        from study.sources.plan import SourcesConfig
        from study.sources.sim.wiring import backend_for
        from study.sources.store import load_sources_runs, run_stored_sources
        from study.sources.tier2 import read_claims

        spec = ModelSpec.parse(model)  # the one parse: a malformed spec is one line
        items = read_items(items_path) if items_path else shipped_items()
        items = items[:limit] if limit else items
        if claims_path is not None and claims_set is not None:
            raise DriftLensError("Give --claims FILE or --claims-set NAME, not both.")
        claims = read_claims(claims_path, items) if claims_path else {}
        if claims_set is not None:
            from study.sources.tier2 import stored_claims

            with session_for(ctx) as session:
                claims = stored_claims(claims_set, session=session, items=items)
        cfgs = [
            SourcesConfig(
                tiers=tuple(sorted(set(tier))),
                instruction=instr,
                vocabulary=vocabulary,
                top_logprobs=top_logprobs,
                logprobs=not no_logprobs,
                prefill=prefill,
                reasoning=reasoning,
                max_tokens=max_tokens,
                seed=run_seed,
            )
            for instr in dict.fromkeys(instruction)
        ]
        target = out_dir or settings(ctx).workspace / "reports" / "sources" / model.replace(
            "/", "_"
        )
        if target.exists() and not target.is_dir():  # said before any probe is asked
            raise DriftLensError(f"{target} is a file; --out needs a folder.")
        CONCURRENCY.check(concurrency)
        runner = executor_for(ctx, executor, address, model=spec)
        backend = backend_for(spec, items)
        with session_for(ctx) as session:
            if runner is None:
                summary = run_stored_sources(
                    run_name,
                    items,
                    backend,
                    cfgs,
                    session=session,
                    claims=claims,
                    concurrency=concurrency,
                    progress_for=progress_callback,
                    on_plan=lambda line: _out.print(line, markup=False),
                )
            else:
                from study.sources.sharded import run_sources_sharded

                with progress_callback(f"probing {model}") as update:
                    summary = run_sources_sharded(
                        run_name,
                        items,
                        spec,
                        cfgs,
                        sharding=sharded_pass(
                            ctx,
                            runner,
                            session=session,
                            per_shard=shard_items,
                            progress=update,
                            on_plan=lambda line: _out.print(line, markup=False),
                        ),
                        claims=claims,
                        concurrency=concurrency,
                    )
            runs = load_sources_runs(summary.name, session=session)
            if claims_set is not None:
                from study.sources.claim_provenance import record_writer_roles

                record_writer_roles(summary.name, claims_set, model, session=session)
        _out.print(
            f"Run {term(summary.name)} ({summary.status}): {summary.already_stored} probes "
            f"already stored, {summary.answered} answered now, {summary.failed} failed."
        )
        if summary.repeat_warning:
            _out.print(f"Warning: {term(summary.repeat_warning)}")
        # one rule for all (as generate): failed probes exit 3 with the cause, and no
        # report is written from an incomplete run
        exit_if_failed(RequestFailures(summary.failed, summary.answered + summary.failed))
        _finish_run(ctx, summary.name, runs, target, bootstrap=bootstrap, seed=seed)
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc) from None


@sources_app.command("report")
def report_cmd(
    ctx: typer.Context,
    run_name: str = typer.Option(..., "--run", help="A stored run (see `sources runs`)."),
    out_dir: Path | None = typer.Option(None, "--out", help="Output folder."),
    bootstrap: int = bootstrap_option(2000),
    seed: int | None = typer.Option(0, "--seed"),
) -> None:
    """Write a stored run's folder: probes.csv, probes.jsonl, stats.json and the report."""
    from app.cli.context import settings
    from storage.errors import DriftLensError

    try:
        runs = _stored_runs(ctx, run_name)
        target = out_dir or settings(ctx).workspace / "reports" / "sources" / run_name.replace(
            "/", "_"
        )
        _finish_run(ctx, run_name, runs, target, bootstrap=bootstrap, seed=seed)
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc) from None


@sources_app.command("show")
def show_cmd(
    ctx: typer.Context,
    run_name: str = typer.Option(..., "--run", help="A stored run (see `sources runs`)."),
    item: str | None = typer.Option(None, "--item", help="Only this item's probes."),
    limit: int = SHOW_LIMIT_OPTION,
) -> None:
    """Print a stored run's probe replies: the letter read, how, and the reply as written."""
    from app.cli.context import session_for
    from study.sources.transcripts import run_replies

    with session_for(ctx) as session:
        shown, total = run_replies(run_name, session=session, item=item, limit=limit)
    _out.print(f"Run {run_name}: {len(shown)} of {total} probes.", markup=False)
    for p in shown:
        lines = [
            "",
            f"{p.item} · {p.variant} · tier {p.tier} · instruction {p.instruction} · {p.status}",
            f"  answered {p.choice} (read by {p.method}; correct {p.correct})",
            f"  reply: {p.text or ''}",
        ]
        if p.reasoning:
            lines.append(f"  reasoning: {p.reasoning}")
        if p.error:
            lines.append(f"  error: {p.error}")
        for line in lines:
            _out.print(line, markup=False, soft_wrap=True)


@sources_app.command("runs")
def runs_cmd(ctx: typer.Context) -> None:
    """List the stored source-reliance runs (newest first)."""
    from app.cli.context import session_for
    from study.sources.store import source_run_lines

    with session_for(ctx) as session:
        lines = source_run_lines(session=session)
    if not lines:
        _out.print("No source-reliance runs stored yet (`driftlens sources run --model M`).")
        return
    table = Table(title="Source-reliance runs", title_justify="left")
    for col in ("run", "model", "status", "items", "instr.", "probes", "unknown", "failed"):
        table.add_column(col)
    for ln in lines:
        table.add_row(
            term(ln.name),
            term(ln.model) + (" (SIMULATED)" if ln.simulated else ""),
            ln.status,
            str(ln.items),
            ln.instructions,
            str(ln.probes),
            str(ln.unknown),
            str(ln.failed),
        )
    _out.print(table)


@sources_app.command("demo")
def demo_cmd(
    ctx: typer.Context,
    out_dir: Path | None = typer.Option(None, "--out", help="Output folder."),
    bootstrap: int = bootstrap_option(2000),
) -> None:
    """The instrument offline on the simulator (shipped items, two presets): report + SFT."""
    from app.cli.context import settings
    from storage.errors import DriftLensError

    try:
        from study.sources.demo import run_sources_demo

        target = out_dir or settings(ctx).workspace / "reports" / "sources-demo"
        res = run_sources_demo(out_dir=target, bootstrap=bootstrap)
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc) from None
    _out.print("[bold red]SIMULATED DATA[/] — every answer comes from the built-in simulator.")
    for name, by in res.types.items():
        parts = "; ".join(
            f"{s}: {b['type']} (P {fmt_num(b['share'][b['type']])})" for s, b in by.items()
        )
        _out.print(f"  {term(name)} — {parts}")
    _out.print("\n[bold]Next:[/]")
    _out.print(f"  open the report      {term(res.report.html.resolve())}")
    _out.print(
        f"  re-run the stats     .venv/bin/driftlens sources stats {term(res.table_csv)} "
        "--json stats.json"
    )
    _out.print(f"  SFT mixture (JSONL)  {term(res.sft_jsonl)}")


def run_sources_demo_cli(
    *, session: Any, workspace: Path, bootstrap: int, samples: int, stage: Stage
) -> DemoOutcome:
    """The source-reliance demo as the main ``driftlens demo`` runs it (its ``cli_demo``).

    In-process on its own simulator with no request cache (seconds), so ``session`` is not
    used, with the instrument demo's own 2,000 bootstrap replicates whatever the main
    demo's ``bootstrap``, its own probes (``samples`` unused) and no progress bar.
    """
    del session, bootstrap, samples, stage
    from study.sources.demo import run_sources_demo

    res = run_sources_demo(out_dir=workspace / "reports" / "sources-demo")
    return DemoOutcome(
        title="Source reliance",
        banner="source reliance: simulated models answer every probe.",
        lines=(
            f"Source reliance: {res.probes} probes, "
            f"{res.unknown} without a letter (read as unknown).",
        ),
        reports=(DemoReport("source reliance", res.report.html.resolve()),),
    )


@sources_app.command("export-sft")
def export_sft_cmd(
    out: Path = typer.Option(..., "--out", help="JSONL file to write."),
    n: int = bounded_option(1000, "--n", bound=SFT_EXAMPLES, help="Examples (1..100,000)."),
    strategy: str = typer.Option("mixed", "--strategy", help="mixed or standard."),
    items_path: Path | None = typer.Option(None, "--items", help="Items (default: shipped)."),
    probes: Path | None = typer.Option(
        None, "--probes", help="A run's probes.csv: take each item's fixed wrong option from it."
    ),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Write an SFT mixture (30% bare, 70% over the twelve assertion variants) as JSONL."""
    from storage.errors import DriftLensError

    try:
        from study.sources.items import read_items, shipped_items
        from study.sources.sft import sft_examples, sft_jsonl
        from study.sources.table import read_sources_csv

        items = read_items(items_path) if items_path else shipped_items()
        wrong: dict[str, str] = {}
        if probes is not None:
            df = read_sources_csv(probes)
            if not {"question_id", "variant", "wrong_choice"} <= set(df.columns):
                raise DriftLensError(f"{probes} is not a probe table (see sources stats).")
            bare = df[df["variant"] == "bare"]
            wrong = dict(zip(bare["question_id"], bare["wrong_choice"], strict=True))
        rows = sft_examples(items, n=n, strategy=strategy, seed=seed, wrong=wrong)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(sft_jsonl(rows), encoding="utf-8")
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc, out) from None
    _out.print(f"Wrote {len(rows)} examples ({strategy}) to {term(out)}")


@sources_app.command("claims")
def claims_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", "-m", help="provider/model that writes claims."),
    out: Path = typer.Option(..., "--out", help="Claims JSONL to write (review, then --claims)."),
    items_path: Path | None = typer.Option(None, "--items", help="Items (default: shipped)."),
    claim_set: str | None = typer.Option(
        None, "--set", help="Store the claims under this set name (default: the model)."
    ),
    concurrency: int = typer.Option(16, "--concurrency", min=1),
) -> None:
    """Write one tier-2 contextual claim per item (prompt tier2-claims-v1; cached).

    The claims go to the JSONL file to review and into the database as a claim set;
    import the reviewed file with `sources claims-import`, use a set with `run --claims-set`.
    """
    from app.cli.context import session_for
    from app.cli.progress import progress_callback
    from storage.errors import DriftLensError

    try:
        from study.sources.items import read_items, shipped_items
        from study.sources.tier2 import claims_to_jsonl, generate_claims, store_generated

        writer = ModelSpec.parse(model)  # before the session: a bad spec stores nothing
        items = read_items(items_path) if items_path else shipped_items()
        name = claim_set or model
        with session_for(ctx) as session, progress_callback(f"claims by {model}") as update:
            res = generate_claims(
                items,
                writer,
                session=session,
                concurrency=concurrency,
                progress=update,
            )
            store_generated(res, claim_set=name, session=session)
            session.commit()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(claims_to_jsonl(res), encoding="utf-8")
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc, out) from None
    _out.print(
        f"Wrote {len(res.claims)} claims to {term(out)} and claim set {term(name)}; "
        f"{len(res.failed)} items without."
    )
    for k, why in list(res.failed.items())[:5]:
        _out.print(f"  {term(k)}: {term(why)}")


@sources_app.command("claims-import")
def claims_import_cmd(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="Reviewed claims JSONL ({id, claim[, model]})."),
    claim_set: str = typer.Option(..., "--set", help="Claim set to store them in."),
    items_path: Path | None = typer.Option(
        None, "--items", help="Items to check the claims against (default: shipped)."
    ),
) -> None:
    """Store a reviewed claims file as a claim set (replacing that set's claims per item)."""
    from app.cli.context import session_for
    from storage.errors import DriftLensError

    try:
        from study.sources.items import read_items, shipped_items
        from study.sources.tier2 import read_claims, store_imported

        items = read_items(items_path) if items_path else shipped_items()
        claims = read_claims(path, items, known_only=True)
        with session_for(ctx) as session:
            n = store_imported(claims, claim_set=claim_set, source=path, session=session)
            session.commit()
    except (DriftLensError, ValueError, OSError) as exc:
        raise _fail(exc, path) from None
    _out.print(f"Stored {n} claims from {term(path)} in claim set {term(claim_set)}.")
