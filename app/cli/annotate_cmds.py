"""``driftlens annotate``: human studies in Label Studio (push, pull, status, apply, annotators)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from rich.text import Text

from app.cli.console import out_console
from app.cli.context import session_for, settings
from app.cli.groups import command_group
from app.cli.options import RESULT_JSON_OPTION
from app.cli.output import echo_json
from app.cli.progress import progress_callback

if TYPE_CHECKING:
    from annotation.aggregate import AggregationConfig
    from annotation.client import LabelStudioClient
    from annotation.kinds import ApplyResult

_out = out_console()

annotate_app, register = command_group(
    "annotate", "Human studies in Label Studio: push tasks, pull annotations, agreement, apply."
)

STUDY_HELP = (
    "Study: question_checks, persona_pair, orthogonality, label_check, helpfulness, "
    "distraction, conflict_rubric, bank_observability, disposition_check, test_awareness."
)
MIN_LEAD_HELP = "Drop annotations made in under this many seconds."


def _client(ctx: typer.Context) -> LabelStudioClient:
    from annotation.client import LabelStudioClient, resolve_connection

    client = LabelStudioClient(resolve_connection(settings(ctx).workspace))
    client.check()
    return client


def _config(min_lead_time: float, min_ratings: int = 2) -> AggregationConfig:
    from annotation.aggregate import AggregationConfig

    return AggregationConfig(min_lead_time_s=min_lead_time, min_ratings=min_ratings)


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


@annotate_app.command("push")
def push_cmd(
    ctx: typer.Context,
    study: str = typer.Argument(..., help=STUDY_HELP),
    select: list[str] = typer.Option(
        [],
        "--select",
        "-s",
        help="Filter key=value, repeatable: questions=, filter=, tier=, run=, conditions=, "
        "condition_class=, catalog=, labeler=, ontology=, dimension=, disposition=, arms=, "
        "batteries=, judge=, limit=, seed=.",
    ),
    new_project: bool = typer.Option(
        False, "--new-project", help="Create a fresh project even if one is recorded."
    ),
    as_json: bool = RESULT_JSON_OPTION,
) -> None:
    """Create or reuse the study's project and import the tasks it does not have yet."""
    from annotation.kinds import get_spec
    from annotation.selection import parse_selection
    from annotation.sync import ensure_project, push, tasks_to_push

    get_spec(study)
    selection = parse_selection(select)
    # The tasks are built first: a bad or empty selection stops here, before a project exists.
    with session_for(ctx) as session:
        tasks = tasks_to_push(study, selection, session=session)
    client = _client(ctx)
    # The project is committed before any import, so a failed import never leaves a
    # project that the workspace does not know about (pushing again reuses it).
    with session_for(ctx) as session:
        project = ensure_project(study, client=client, session=session, new=new_project)
    with session_for(ctx) as session, progress_callback(f"pushing {study}") as update:
        result = push(study, tasks, client=client, session=session, progress=update)
    if as_json:
        echo_json({**asdict(result), "project_created": project.created})
        return
    verb = "Created" if project.created else "Reused"
    _out.print(
        f"{verb} project {result.project_id} for {study}; imported {result.imported} of "
        f"{result.selected} selected tasks ({result.already_present} were already there). "
        f"Open {result.project_url}",
        markup=False,
    )


@annotate_app.command("pull")
def pull_cmd(
    ctx: typer.Context,
    study: str | None = typer.Argument(None, help=STUDY_HELP + " Default: every study."),
    as_json: bool = RESULT_JSON_OPTION,
) -> None:
    """Mirror annotations from Label Studio (upsert on annotation ids; edits are picked up)."""
    from annotation.kinds import get_spec
    from annotation.sync import pull

    if study is not None:
        get_spec(study)
    client = _client(ctx)
    with session_for(ctx) as session, progress_callback("pulling") as update:
        results = pull(study, client=client, session=session, progress=update)
    if as_json:
        echo_json(results)
        return
    if not results:
        _out.print("No studies pushed to this server yet.")
    for r in results:
        _out.print(
            f"{r.study} (project {r.project_id}): {r.annotations} annotations on {r.tasks} "
            f"tasks; {r.inserted} new, {r.updated} updated, {r.unchanged} unchanged.",
            markup=False,
        )
        if r.note:
            _out.print(r.note, markup=False)


@annotate_app.command("status")
def status_cmd(
    ctx: typer.Context,
    study: str = typer.Argument(..., help=STUDY_HELP),
    min_lead_time: float = typer.Option(10.0, "--min-lead-time", help=MIN_LEAD_HELP),
    offline: bool = typer.Option(
        False, "--offline", help="Only what was pulled; do not ask Label Studio for progress."
    ),
    min_ratings: int | None = typer.Option(
        None,
        "--min-ratings",
        min=1,
        help="Rating studies (test_awareness, helpfulness): count the tasks with at least "
        "this many kept ratings (default 2, as apply).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Progress, annotators, Krippendorff's alpha and disagreement rate of a study."""
    from annotation.apply import study_status
    from annotation.kinds import get_spec, rating_studies

    if min_ratings is not None and get_spec(study).rating_question is None:
        from storage.errors import InputError

        raise InputError(
            f"--min-ratings applies to the rating studies ({', '.join(rating_studies())}); "
            f"{study} is not one."
        )
    with session_for(ctx) as session:
        st = study_status(study, session=session, config=_config(min_lead_time, min_ratings or 2))
    live: dict[str, Any] = {}
    if not offline and st.project_id is not None:
        from annotation.apply import require_study
        from annotation.sync import require_same_server

        client = _client(ctx)
        with session_for(ctx) as session:
            require_same_server(require_study(study, session=session), client)
        project = client.get_project(st.project_id)
        live = {
            "ls_tasks": project.task_number,
            "ls_tasks_with_annotations": project.num_tasks_with_annotations,
            "ls_annotations": project.total_annotations_number,
        }
    if as_json:
        payload = {
            "study": st.study,
            "project_id": st.project_id,
            "tasks": st.tasks,
            "annotations": st.annotations,
            "annotators": len(st.annotators),
            "annotator_emails": list(st.annotators),
            "kept_annotations": st.kept,
            "dropped_fast": st.dropped_fast,
            "items_with_label": st.items_with_label,
            "items_unanimous": st.items_unanimous,
            "krippendorff_alpha": st.krippendorff_alpha,
            "alpha_by_question": st.alpha_by_question,
            "disagreement_rate": st.disagreement_rate,
            "min_lead_time_s": st.min_lead_time_s,
            **live,
        }
        if st.min_ratings is not None:
            payload["min_ratings"] = st.min_ratings
            payload["items_with_min_ratings"] = st.items_with_min_ratings
            payload["ratings_per_task"] = {
                str(k): v for k, v in (st.ratings_per_task or {}).items()
            }
        echo_json(payload)
        return
    table = Table(title=f"{st.study} (project {st.project_id})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows: list[tuple[str, str]] = [
        ("tasks", str(st.tasks)),
        ("annotations pulled", str(st.annotations)),
        (f"dropped (< {st.min_lead_time_s:g} s)", str(st.dropped_fast)),
        ("annotators", str(len(st.annotators))),
        ("items with a 2-of-3 label", str(st.items_with_label)),
        ("items unanimous", str(st.items_unanimous)),
        ("Krippendorff's alpha", _num(st.krippendorff_alpha)),
        ("disagreement rate", _num(st.disagreement_rate)),
    ]
    if st.min_ratings is not None:
        per = st.ratings_per_task or {}
        rows.append((f"tasks with >= {st.min_ratings} ratings", str(st.items_with_min_ratings)))
        rows += [
            (f"  tasks with {k} rating{'s' if k != 1 else ''}", str(v)) for k, v in per.items()
        ]
    rows += [(f"  in Label Studio: {k[3:]}", str(v)) for k, v in live.items()]
    for name, value in rows:
        table.add_row(name, value)
    _out.print(table)
    if st.annotators:
        _out.print("Annotators: " + ", ".join(st.annotators), markup=False)


@annotate_app.command("apply")
def apply_cmd(
    ctx: typer.Context,
    study: str = typer.Argument(..., help=STUDY_HELP),
    min_lead_time: float = typer.Option(10.0, "--min-lead-time", help=MIN_LEAD_HELP),
    min_ratings: int = typer.Option(
        2,
        "--min-ratings",
        min=1,
        help="Rating studies (test_awareness): kept ratings an item needs to count; items "
        "with fewer are left out and counted.",
    ),
    no_pull: bool = typer.Option(
        False, "--no-pull", help="Apply what was pulled before; do not pull first."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print every item and result as JSON."),
) -> None:
    """Pull, aggregate (2-of-3, unanimity, alpha) and apply the results of a study."""
    from annotation.apply import apply_study, require_study
    from annotation.kinds import get_spec
    from annotation.sync import pull

    get_spec(study)
    if not no_pull:
        with session_for(ctx) as session:
            require_study(study, session=session)
            pull(study, client=_client(ctx), session=session)
    with session_for(ctx) as session:
        result = apply_study(study, session=session, config=_config(min_lead_time, min_ratings))
    if as_json:
        echo_json(apply_payload(result))
        return
    _print_apply(result)


def apply_payload(result: ApplyResult) -> dict[str, Any]:
    """The JSON form of an apply result: every item plus the study's outcomes."""
    from annotation.apply import item_rows

    agg = result.aggregate
    out: dict[str, Any] = {
        "study": result.study,
        "annotations": agg.n_annotations,
        "kept_annotations": agg.n_kept,
        "dropped_fast": agg.n_dropped_fast,
        "annotators": list(agg.annotators),
        "krippendorff_alpha": agg.alpha,
        "alpha_by_question": dict(agg.alpha_by_question),
        "disagreement_rate": agg.disagreement_rate,
        "items": item_rows(agg),
    }
    out.update(result.payload())
    return out


def _print_apply(result: ApplyResult) -> None:
    agg = result.aggregate
    _out.print(
        f"{result.study}: {len(agg.items)} items, {agg.n_kept} of {agg.n_annotations} "
        f"annotations kept ({agg.n_dropped_fast} under {agg.config.min_lead_time_s:g} s); "
        f"alpha {_num(agg.alpha)}, disagreement rate {_num(agg.disagreement_rate)}.",
        markup=False,
    )
    # what each kind shows of its outcomes is its result type's own summary
    summary = result.summary()
    for part in summary.tables:
        table = Table(title=Text(part.title))
        for name in part.columns:
            table.add_column(name)
        for row in part.rows:
            # cells may hold annotators' or users' text: shown literally, never as markup
            table.add_row(*(Text(cell) for cell in row))
        _out.print(table)
    for line in summary.lines:
        _out.print(line, markup=False)


@annotate_app.command("annotators")
def annotators_cmd(
    ctx: typer.Context,
    add: list[str] = typer.Option([], "--add", help="Create an account for this e-mail."),
    set_password: bool = typer.Option(
        False,
        "--set-password",
        help="Give new accounts a generated password, printed once (local server only).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the accounts as JSON."),
) -> None:
    """List annotator accounts (user id -> e-mail) or create new ones."""
    from annotation.accounts import create_annotators, sync_annotators

    client = _client(ctx)
    with session_for(ctx) as session:
        if add:
            accounts = create_annotators(
                add,
                client=client,
                session=session,
                workspace=settings(ctx).workspace,
                set_passwords=set_password,
            )
        else:
            accounts = sync_annotators(client=client, session=session)
    if as_json:
        echo_json(accounts)
        return
    table = Table(title="Label Studio users")
    for name in ("user id", "e-mail", "created now", "password"):
        table.add_column(name)
    for a in accounts:
        table.add_row(str(a.ls_user_id), a.email, "yes" if a.created else "", a.password or "")
    _out.print(table)
    if add and not set_password:
        _out.print(
            "New accounts sign in through the invite link: `driftlens annotate invite`.",
            markup=False,
        )


@annotate_app.command("invite")
def invite_cmd(ctx: typer.Context) -> None:
    """Print the organisation's invite link for annotators to sign up."""
    from annotation.accounts import invite_link

    typer.echo(invite_link(client=_client(ctx)))


@annotate_app.command("config")
def config_cmd(study: str = typer.Argument(..., help=STUDY_HELP)) -> None:
    """Print the Label Studio labeling config (XML) of a study."""
    from annotation.kinds import label_config

    typer.echo(label_config(study))
