"""Exports of generation runs (JSONL, one object per response)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from storage.errors import InputError
from storage.models import ModelSpecRow, Perturbation, Question, Response
from storage.repo.runs import require_run

#: Fields of every exported response object, in this order.
RESPONSE_FIELDS: tuple[str, ...] = (
    "question_id",
    "condition",
    "condition_class",
    "perturbation_text",
    "sample",
    "model",
    "text",
    "steps",
    "answer",
    "parse_status",
    "finish_reason",
    "error",
    "logprobs",
)


def iter_response_records(run_name: str, *, session: Session) -> Iterator[dict[str, Any]]:
    """Yield one export record per response of a run, by question, condition, sample.

    ``question_id`` is the question's external id; ``perturbation_text`` is ``""`` for the
    baseline; ``model`` is the run's model spec.

    Raises:
        NotFoundError: No run of that name.
    """
    run = require_run(run_name, session=session)
    spec = session.get(ModelSpecRow, run.model_spec_id)
    model = spec.spec if spec is not None else ""
    stmt = (
        select(Response, Question.external_id, Perturbation.text)
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Perturbation, col(Perturbation.id) == col(Response.perturbation_id), isouter=True)
        .where(Response.run_id == run.id)
        .order_by(col(Response.question_id), col(Response.id))
    )
    for response, question_key, perturbation_text in session.exec(stmt):
        yield {
            "question_id": question_key,
            "condition": response.condition,
            "condition_class": response.condition_class,
            "perturbation_text": perturbation_text or "",
            "sample": response.sample,
            "model": model,
            "text": response.text,
            "steps": list(response.steps or []),
            "answer": response.answer,
            "parse_status": response.parse_status,
            "finish_reason": response.finish_reason,
            "error": response.error,
            # Token logprobs with their top-k alternatives, when the run asked for them.
            "logprobs": response.logprobs,
        }


def export_responses_jsonl(run_name: str, out: Path, *, session: Session) -> int:
    """Write a run's responses to ``out`` as JSONL (atomically: all or nothing).

    Returns:
        The number of responses written.

    Raises:
        InputError: ``out`` does not end in ``.jsonl``.
        NotFoundError: No run of that name.
    """
    if out.suffix.lower() not in (".jsonl", ".ndjson"):
        raise InputError(f"{out}: responses are exported as .jsonl.")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for record in iter_response_records(run_name, session=session):
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count
