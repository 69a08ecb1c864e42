"""``driftlens questions``: import candidate questions and list them."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from app.cli.console import out_console
from app.cli.context import session_for
from app.cli.failures import retry_hint
from app.cli.groups import command_group
from app.cli.options import CONCURRENCY_OPTION, SUMMARY_JSON_OPTION
from app.cli.output import echo_json, echo_jsonl
from app.cli.request_limits import (
    JUDGE_MAX_TOKENS_OPTION,
    MAX_ATTEMPTS_OPTION,
    TIMEOUT_OPTION,
    request_limits,
)

_out = out_console()


def import_cmd(
    ctx: typer.Context,
    file: Path | None = typer.Argument(
        None, help="CSV (question/text column, optional id, domains) or JSONL (text, id)."
    ),
    sample: bool = typer.Option(
        False, "--sample", help="Import the bundled sample questions instead of a file."
    ),
    source: str | None = typer.Option(None, "--source", help="Source label (default: file name)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Import questions; duplicates are skipped and reported, a bad row stops everything."""
    from storage.errors import InputError
    from study.questions import import_questions, import_sample_questions

    if (file is None) == (not sample):
        raise InputError("Give a FILE to import or --sample for the bundled questions (not both).")
    with session_for(ctx) as session:
        if sample:
            report = import_sample_questions(session=session)
        else:
            assert file is not None
            if not file.is_file():
                raise FileNotFoundError(2, "No such file", str(file))
            report = import_questions(file, session=session, source=source)
    if as_json:
        payload = {
            "source": report.source,
            "added": list(report.added),
            "duplicates": [
                {"line": d.line, "id": d.external_id, "reason": d.reason} for d in report.duplicates
            ],
        }
        echo_json(payload)
        return
    _out.print(f"Imported {len(report.added)} question(s) from {report.source}.", markup=False)
    for dup in report.duplicates:
        _out.print(
            f"  duplicate, skipped: line {dup.line} ({dup.external_id}): {dup.reason}",
            markup=False,
        )


def list_cmd(
    ctx: typer.Context,
    tier: str | None = typer.Option(None, "--tier", help="Only core or relaxed questions."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON lines instead of a table."),
) -> None:
    """List stored questions."""
    from study.questions import list_questions

    with session_for(ctx) as session:
        rows = list_questions(session=session, tier=tier)
    if as_json:
        echo_jsonl(
            {
                "id": q.external_id,
                "text": q.text,
                "domains": list(q.domains or []),
                "tier": q.tier,
                "source": q.source,
                "filter_label": q.filter_label,
                "filter_reason": q.filter_reason,
                "filter_domains": q.filter_domains,
                "filter_model": q.filter_model,
                "filter_error": q.filter_error,
            }
            for q in rows
        )
        return
    table = Table(title=f"{len(rows)} question(s)")
    for column in ("id", "domains", "tier", "filter", "reason", "text"):
        table.add_column(column)
    for q in rows:
        # Text objects: question text is data, never rich markup. Rejected questions stay
        # listed with the filter's reason; an unparseable verdict shows its error.
        verdict = q.filter_label or ("ERROR" if q.filter_error else "")
        table.add_row(
            Text(q.external_id),
            Text(", ".join(q.domains or q.filter_domains or [])),
            Text(q.tier or ""),
            Text(verdict),
            Text(q.filter_reason or q.filter_error or ""),
            Text(q.text),
        )
    _out.print(table)


def filter_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Filter model, provider/model (sim/default)."),
    concurrency: int = CONCURRENCY_OPTION,
    redo: bool = typer.Option(
        False, "--redo", help="Ask again about questions this model already screened."
    ),
    max_tokens: int | None = JUDGE_MAX_TOKENS_OPTION,
    timeout: float | None = TIMEOUT_OPTION,
    max_attempts: int | None = MAX_ATTEMPTS_OPTION,
    as_json: bool = SUMMARY_JSON_OPTION,
) -> None:
    """Screen questions with an LLM (SPEC §2): label, reason and domains per question."""

    from app.cli.progress import progress_callback
    from llm.specs import ModelSpec
    from study.reasoning.question_filter import filter_questions

    spec = ModelSpec.parse(model)  # before the session: a bad spec stores nothing
    limits = request_limits(timeout, max_attempts, judge_max_tokens=max_tokens)
    with limits, session_for(ctx) as session, progress_callback("filtering questions") as bar:
        s = filter_questions(
            spec, session=session, concurrency=concurrency, progress=bar, redo=redo
        )
    if as_json:
        echo_json(s)
        return
    _out.print(
        f"Filtered with {s.model}: {s.requested} asked now ({s.accepted} accepted, "
        f"{s.rejected} rejected, {s.errors} unparseable after repair, {s.failed} failed), "
        f"{s.skipped} already screened by this model; {s.repaired} needed a repair request, "
        f"{s.long_reasons} reason(s) over 15 words.",
        markup=False,
    )
    retry_hint(_out, s.failed)


questions_app, register = command_group(
    "questions",
    "Import, filter and list benchmark questions.",
    {"import": import_cmd, "list": list_cmd, "filter": filter_cmd},
)
