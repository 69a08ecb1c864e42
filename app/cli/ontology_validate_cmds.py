"""``driftlens ontology validate``: the validation experiments (stability, robustness,
cross-ontology table, a run of the Validation page's, the human check)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from app.cli.console import fmt_measure, out_console
from app.cli.context import session_for
from app.cli.options import ALLOW_SELF_JUDGING_OPTION, JSON_OPTION, ROUND_OPTION
from app.cli.output import echo_json
from app.cli.progress import progress_callback

_out = out_console()

validate_app = typer.Typer(
    help="Validation experiments: stability, robustness, cross-ontology table, human check.",
    no_args_is_help=True,
)


def _report(report: Any, as_json: bool) -> None:
    from dataclasses import asdict

    from ontology.agreement_tracking import _json_safe

    data = _json_safe(asdict(report))
    if as_json:
        echo_json(data, ensure_ascii=False)
        return
    _out.print(f"{report.description} ({report.reference})", markup=False)
    for row in data["rows"]:
        _out.print(
            "  "
            + ", ".join(
                f"{k}: {fmt_measure(v) if isinstance(v, float) else v}" for k, v in row.items()
            ),
            markup=False,
        )
    for note in report.notes:
        _out.print(f"  note: {note}", markup=False)


def _validate(
    ctx: typer.Context, what: str, as_json: bool, experiment: Callable[[Any, Any], Any]
) -> None:
    """Run ``experiment(session, progress)`` under a progress bar saying ``what``; print it."""
    with session_for(ctx) as session, progress_callback(what) as update:
        report = experiment(session, update)
    _report(report, as_json)


#: The round and labeler of the experiments that relabel a round's responses.
_RELABEL_ROUND_OPTION = typer.Option(..., "--round", help="Round whose responses to relabel.")
_LABELER_OPTION = typer.Option(..., "--labeler", help="Labeler spec.")


@validate_app.command("stability")
def validate_stability_cmd(
    ctx: typer.Context,
    round_number: int = _RELABEL_ROUND_OPTION,
    labeler: str = _LABELER_OPTION,
    temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature."),
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Within-model agreement: the same labeler twice at T = 1 on a round's responses."""
    from ontology.validation import within_model_stability

    def experiment(session: Any, update: Any) -> Any:
        return within_model_stability(
            round_number,
            labeler,
            session=session,
            temperature=temperature,
            progress=update,
            allow_self_judging=allow_self_judging,
        )

    _validate(ctx, "labeling twice", as_json, experiment)


@validate_app.command("robustness")
def validate_robustness_cmd(
    ctx: typer.Context,
    round_number: int = _RELABEL_ROUND_OPTION,
    labeler: str = _LABELER_OPTION,
    model: str = typer.Option(..., "--model", help="Model that paraphrases the definitions."),
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Definition robustness: relabel under an equivalent rewrite of every definition."""
    from llm.specs import ModelSpec
    from ontology.validation import definition_robustness

    spec = ModelSpec.parse(model)  # a malformed spec: one line before a session opens

    def experiment(session: Any, update: Any) -> Any:
        return definition_robustness(
            round_number,
            labeler,
            model=spec,
            session=session,
            progress=update,
            allow_self_judging=allow_self_judging,
        )

    _validate(ctx, "relabeling", as_json, experiment)


@validate_app.command("cross")
def validate_cross_cmd(
    ctx: typer.Context,
    run: str = typer.Option(..., "--run", help="Generation run."),
    labelers: str = typer.Option(..., "--labelers", help="Comma-separated labeler specs."),
    sample: int = typer.Option(100, "--sample", help="Responses to sample."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed."),
    allow_self_judging: bool = ALLOW_SELF_JUDGING_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Refined versus original-style ontology: cross-labeler agreement side by side."""
    from ontology.validation import cross_model_table
    from ontology.versions import seed_ontologies

    def experiment(session: Any, update: Any) -> Any:
        seed_ontologies(session=session)
        session.commit()
        return cross_model_table(
            run,
            labelers.split(","),
            session=session,
            sample=sample,
            seed=seed,
            progress=update,
            allow_self_judging=allow_self_judging,
        )

    _validate(ctx, "labeling", as_json, experiment)


@validate_app.command("run")
def validate_run_cmd(
    ctx: typer.Context,
    request: str = typer.Option(
        ..., "--request", help="The experiment as JSON (the Validation page's request)."
    ),
) -> None:
    """Run one experiment of the Validation page and keep its result in validation/."""
    import json

    from app.cli.context import settings
    from ontology.validation_runs import parse_request, run_experiment, save_result
    from storage.errors import InputError
    from study.jobs.reporter import record_result

    try:
        data = json.loads(request)
    except json.JSONDecodeError as exc:
        raise InputError(f"--request is not JSON: {exc.msg} at character {exc.pos}.") from None
    if not isinstance(data, dict):
        raise InputError("--request must be a JSON object.")
    parsed = parse_request(data)
    with session_for(ctx) as session, progress_callback(parsed.experiment) as update:
        report = run_experiment(parsed, session=session, progress=update)
    stored = save_result(parsed, report, workspace=settings(ctx).workspace)
    record_result(result=stored.path.name)
    _out.print(f"{parsed.summary()}: kept in {stored.path}", markup=False)


@validate_app.command("human")
def validate_human_cmd(
    ctx: typer.Context,
    round_number: int = ROUND_OPTION,
    labeler: str = typer.Option(..., "--labeler", help="Labeler whose labels to check."),
    limit: int = typer.Option(100, "--limit", help="Labels to check (reference 100)."),
    push: bool = typer.Option(
        False, "--push", help="Push the label_check study to Label Studio now."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Human check of LLM labels: hand a round's labels to Label Studio (label_check study)."""
    from ontology.validation import human_label_check

    with session_for(ctx) as session:
        report = human_label_check(round_number, labeler, session=session, limit=limit)
    if not push:
        _report(report, as_json)
        return
    # The studio hands over to the human-studies room; the app layer joins the two.
    from app.cli.annotate_cmds import push_cmd

    push_cmd(
        ctx,
        study="label_check",
        select=list(report.rows[0]["select"]),
        new_project=False,
        as_json=as_json,
    )
