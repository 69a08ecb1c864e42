"""Read-only views of a run for the browser: overview counts and one question side by side."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from ontology.labelers.registry import ensure_labeler_spec
from ontology.versions import document, get_version
from storage.errors import NotFoundError
from storage.models import (
    BASELINE_CONDITION,
    ModelSpecRow,
    Perturbation,
    Question,
    Response,
)
from storage.repo.labels import step_labels_for
from storage.repo.runs import require_run
from study.reasoning.report.data import StepView, step_views


@dataclass(frozen=True)
class RunOverview:
    """Counts that tell a researcher what a run holds."""

    name: str
    model: str
    simulated: bool
    status: str
    responses: int
    failed: int
    by_class: dict[str, int]
    by_parse_status: dict[str, int]
    question_ids: tuple[str, ...]


@dataclass(frozen=True)
class ResponseView:
    """One response of a question, with its steps and their labels."""

    condition: str
    condition_class: str
    memory_line: str
    sample: int
    steps: tuple[StepView, ...]
    answer: str | None
    parse_status: str
    error: str | None


def run_overview(name: str, *, session: Session) -> RunOverview:
    """Counts per condition class and parse status, and the questions the run covers.

    Computed in SQL (``GROUP BY`` over the run's rows, the questions from the run's key
    index), so the page never loads the run's responses.
    """
    run = require_run(name, session=session)
    model = session.get(ModelSpecRow, run.model_spec_id)
    by_class: dict[str, int] = {}
    by_status: dict[str, int] = {}
    failed = total = 0
    for klass, status, is_failed, n in session.execute(
        select(
            Response.condition_class,
            Response.parse_status,
            col(Response.error).is_not(None),
            func.count(),
        )
        .where(Response.run_id == run.id)
        .group_by(
            col(Response.condition_class),
            col(Response.parse_status),
            col(Response.error).is_not(None),
        )
    ):
        by_class[klass] = by_class.get(klass, 0) + n
        by_status[status] = by_status.get(status, 0) + n
        failed += n if is_failed else 0
        total += n
    run_questions = select(Response.question_id).where(Response.run_id == run.id).distinct()
    questions = session.exec(
        select(Question.external_id)
        .where(col(Question.id).in_(run_questions))
        .order_by(col(Question.external_id))
    ).all()
    return RunOverview(
        name=run.name,
        model=model.spec if model else "?",
        simulated=run.simulated,
        status=run.status,
        responses=total,
        failed=failed,
        by_class=by_class,
        by_parse_status=by_status,
        question_ids=tuple(questions),
    )


@dataclass(frozen=True)
class ResponseRow:
    """One response in a run's response table (untrusted text: render it inert)."""

    question_id: str
    condition: str
    condition_class: str
    sample: int
    parse_status: str
    answer: str | None
    error: str | None


@dataclass(frozen=True)
class ResponsePage:
    """One page of a run's responses and where it lies in the whole list.

    Attributes:
        rows: this page's rows, in (question, condition, sample) order.
        total: responses in the run (all pages).
        offset: index of the first row of this page in the whole list.
        limit: the page size asked for.
        version: result layout version.
    """

    rows: tuple[ResponseRow, ...]
    total: int
    offset: int
    limit: int
    version: int = 1

    @property
    def pages(self) -> int:
        """How many pages of ``limit`` rows the run fills (at least 1)."""
        return max(1, -(-self.total // self.limit))


def response_page(
    name: str,
    *,
    session: Session,
    offset: int = 0,
    limit: int = 50,
    total: int | None = None,
) -> ResponsePage:
    """One page of a run's responses, read with ``LIMIT``/``OFFSET`` in SQL.

    Ordered by the run's unique key (question, condition, sample), so the database walks
    its index and never sorts or loads the run. ``total`` (e.g. from :func:`run_revision`)
    saves the count.

    Raises:
        NotFoundError: no run of that name.
        ValueError: a negative offset or a limit below 1.
    """
    if offset < 0 or limit < 1:
        raise ValueError("offset must be >= 0 and limit >= 1")
    run = require_run(name, session=session)
    if total is None:
        total = int(
            session.execute(
                select(func.count()).select_from(Response).where(Response.run_id == run.id)
            ).scalar_one()
        )
    rows = session.execute(
        sa_select(
            col(Question.external_id),
            col(Response.condition),
            col(Response.condition_class),
            col(Response.sample),
            col(Response.parse_status),
            col(Response.answer),
            col(Response.error),
        )
        .join(Question, col(Question.id) == col(Response.question_id))
        .where(col(Response.run_id) == run.id)
        .order_by(col(Response.question_id), col(Response.condition), col(Response.sample))
        .offset(offset)
        .limit(limit)
    ).all()
    return ResponsePage(
        rows=tuple(ResponseRow(*row) for row in rows), total=total, offset=offset, limit=limit
    )


def run_revision(name: str, *, session: Session) -> tuple[str, str, int, int]:
    """What changes whenever a run's overview can: status, last update, rows, newest row.

    Cheap (one index-only aggregate over the run's key), so a page can cache the overview
    per revision and recompute it only when the run changed.
    """
    run = require_run(name, session=session)
    n, newest = session.execute(
        select(func.count(), func.coalesce(func.max(Response.id), 0)).where(
            Response.run_id == run.id
        )
    ).one()
    return (run.status, run.updated_at.isoformat(), int(n), int(newest))


def question_responses(
    run_name: str,
    question_id: str,
    *,
    session: Session,
    labeler: str = "keywords",
    ontology_version: str | int | None = None,
) -> tuple[str, list[ResponseView]]:
    """The question text and every response to it, baseline first, with step labels."""
    run = require_run(run_name, session=session)
    question = session.exec(select(Question).where(Question.external_id == question_id)).first()
    if question is None:
        raise NotFoundError(f"no question {question_id!r} in this workspace")
    version = get_version(ontology_version, session=session)
    doc = document(version)
    spec = ensure_labeler_spec(labeler, session=session)
    responses = session.exec(
        select(Response, Perturbation.text)
        .join(Perturbation, col(Perturbation.id) == col(Response.perturbation_id), isouter=True)
        .where(Response.run_id == run.id, Response.question_id == question.id)
        .order_by(col(Response.condition), col(Response.sample))
    ).all()
    assert spec.id is not None and version.id is not None
    labels = step_labels_for(
        [r.id for r, _ in responses if r.id is not None],
        labeler_id=spec.id,
        ontology_version_id=version.id,
        session=session,
    )
    views = []
    for response, memory in responses:
        by_index = {lab.step_index: lab.symbol for lab in labels.get(response.id or -1, [])}
        steps = step_views(response.steps, by_index, doc.root_of)
        views.append(
            ResponseView(
                condition=response.condition,
                condition_class=response.condition_class,
                memory_line=memory or "",
                sample=response.sample,
                steps=steps,
                answer=response.answer,
                parse_status=response.parse_status,
                error=response.error,
            )
        )
    views.sort(key=lambda v: (v.condition != BASELINE_CONDITION, v.condition, v.sample))
    return question.text, views
