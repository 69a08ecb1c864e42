"""Label every step of a run's responses and read trajectories back for drift analysis.

Labeling is resumable: responses that already have labels from this labeler under this
ontology version are skipped, and labels are committed in batches so an interrupted run
keeps what it finished.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sqlalchemy import insert
from sqlmodel import Session, col, select

from ontology.labelers.base import LabelItem, label_items
from ontology.labelers.registry import ensure_labeler_spec, make_labeler
from ontology.versions import document, get_version
from storage.errors import NotFoundError
from storage.models import (
    GenerationRun,
    ModelSpec,
    OntologyVersion,
    Question,
    Response,
    StepLabel,
)
from storage.repo.runs import get_run, require_run
from storage.types import utcnow
from study.reasoning.drift import Trajectory

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class LabelSummary:
    """What one labeling pass did."""

    run: str
    labeler: str
    ontology_version: str
    responses: int
    labeled_now: int
    already_labeled: int
    steps_labeled: int
    unmapped_steps: int
    without_steps: int
    failed: int = 0  # responses whose labeling request failed (nothing stored; rerun)


def _run(name: str, *, session: Session) -> GenerationRun:
    run = get_run(name, session=session)
    if run is None:
        raise NotFoundError(f"no run named {name!r} in this workspace")
    return run


def label_run(
    run_name: str,
    labeler_spec: str,
    *,
    session: Session,
    ontology_version: str | int | None = None,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> LabelSummary:
    """Label every step of every response of ``run_name`` with ``labeler_spec``.

    Responses go to the labeler ``batch_size`` at a time through its batch path (for
    ``llm:`` labelers: concurrent, cached requests; see
    :func:`ontology.labelers.base.label_items`); each chunk is committed.
    """
    run = _run(run_name, session=session)
    version = get_version(ontology_version, session=session)
    doc = document(version)
    labeler = make_labeler(labeler_spec)
    spec_row = ensure_labeler_spec(labeler_spec, session=session)
    session.commit()
    assert version.id is not None and spec_row.id is not None
    done_ids = set(
        session.exec(
            select(StepLabel.response_id)
            .where(StepLabel.labeler_id == spec_row.id)
            .where(StepLabel.ontology_version_id == version.id)
            .where(StepLabel.repeat == 0)
            .distinct()
        ).all()
    )
    responses = session.exec(
        select(Response).where(Response.run_id == run.id).order_by(col(Response.id))
    ).all()
    todo = [r for r in responses if r.id not in done_ids and r.steps]
    without_steps = sum(1 for r in responses if not r.steps)
    steps_labeled = unmapped = failed = 0
    if progress is not None:
        progress(0, len(todo))
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        # One batch per chunk: an LLM labeler sends its requests concurrently through the
        # request cache (llm.batch), so a rerun after losing labels sends nothing; offline
        # labelers label the chunk in process.
        items = [LabelItem(str(r.id), tuple(r.steps)) for r in chunk]
        done_before = start

        def chunk_progress(done: int, _total: int, offset: int = done_before) -> None:
            if progress is not None:
                progress(offset + done, len(todo))

        results = label_items(
            labeler, items, ontology=doc, session=session, progress=chunk_progress
        )
        pending: list[dict[str, object]] = []
        for response, labels in zip(chunk, results, strict=True):
            assert response.id is not None
            if not labels:  # the request failed at the endpoint: nothing stored, retried
                failed += 1
                continue
            for result in labels:
                pending.append(
                    {
                        "response_id": response.id,
                        "step_index": result.step_index,
                        "labeler_id": spec_row.id,
                        "ontology_version_id": version.id,
                        "repeat": 0,
                        "category": result.category,
                        "symbol": result.symbol,
                        "parse_status": result.parse_status,
                        "created_at": utcnow(),
                    }
                )
                steps_labeled += 1
                unmapped += result.symbol == "unmapped"
        if pending:
            # Core bulk insert: tens of thousands of rows, where ORM objects cost seconds.
            session.execute(insert(StepLabel), pending)
        session.commit()
        if progress is not None:
            progress(start + len(chunk), len(todo))
    return LabelSummary(
        run=run_name,
        labeler=labeler_spec,
        ontology_version=f"{version.name}@{version.version}",
        responses=len(responses),
        labeled_now=len(todo) - failed,
        already_labeled=len(done_ids),
        steps_labeled=steps_labeled,
        unmapped_steps=unmapped,
        without_steps=without_steps,
        failed=failed,
    )


def load_trajectories(
    run_name: str,
    labeler_spec: str,
    *,
    session: Session,
    ontology_version: str | int | None = None,
) -> list[Trajectory]:
    """Return one :class:`Trajectory` per response (unusable ones flagged, not dropped)."""
    run = _run(run_name, session=session)
    version = get_version(ontology_version, session=session)
    doc = document(version)
    spec_row = ensure_labeler_spec(labeler_spec, session=session)
    model = session.get(ModelSpec, run.model_spec_id)
    model_name = model.spec if model else str(run.model_spec_id)
    labels: dict[int, dict[int, str]] = {}
    for response_id, step_index, symbol in session.exec(
        select(StepLabel.response_id, StepLabel.step_index, StepLabel.symbol)
        .join(Response, col(Response.id) == col(StepLabel.response_id))
        .where(Response.run_id == run.id)
        .where(StepLabel.labeler_id == spec_row.id)
        .where(StepLabel.ontology_version_id == version.id)
        .where(StepLabel.repeat == 0)
    ).all():
        labels.setdefault(response_id, {})[step_index] = symbol
    rows = session.exec(
        select(Response, Question.external_id)
        .join(Question, col(Question.id) == col(Response.question_id))
        .where(Response.run_id == run.id)
    ).all()
    out: list[Trajectory] = []
    for response, question_key in rows:
        assert response.id is not None
        got = labels.get(response.id)
        if response.error and not response.text:
            usable, reason = False, "request_failed"
        elif not response.steps:
            usable, reason = False, "no_steps"
        elif got is None or len(got) < len(response.steps):
            usable, reason = False, "not_labeled"
        else:
            usable, reason = True, ""
        symbols = (
            tuple(doc.symbol_of.get(got[i], 0) for i in range(len(response.steps)))
            if usable and got is not None
            else ()
        )
        out.append(
            Trajectory(
                model=model_name,
                question_id=question_key,
                condition=response.condition,
                condition_class=response.condition_class,
                sample=response.sample,
                symbols=symbols,
                usable=usable,
                reason=reason,
            )
        )
    return out


def load_runs(
    run_names: Sequence[str],
    labeler_spec: str,
    *,
    session: Session,
    version: OntologyVersion,
) -> tuple[list[Trajectory], dict[str, GenerationRun]]:
    """Trajectories of several runs, with one model label per run.

    The label is the run's model spec; when two runs share a model spec the run name is
    appended (``spec [run]``), so their drift is never pooled as one model.

    Returns:
        The trajectories and the map model label → run.
    """
    runs = [require_run(name, session=session) for name in run_names]
    specs = {run.name: session.get(ModelSpec, run.model_spec_id) for run in runs}
    counts: dict[str, int] = {}
    for run in runs:
        spec = specs[run.name]
        key = spec.spec if spec is not None else str(run.model_spec_id)
        counts[key] = counts.get(key, 0) + 1
    trajectories: list[Trajectory] = []
    run_of: dict[str, GenerationRun] = {}
    for run in runs:
        spec = specs[run.name]
        key = spec.spec if spec is not None else str(run.model_spec_id)
        label = key if counts[key] == 1 else f"{key} [{run.name}]"
        run_of[label] = run
        for t in load_trajectories(
            run.name, labeler_spec, session=session, ontology_version=version.id
        ):
            trajectories.append(t if t.model == label else replace(t, model=label))
    return trajectories, run_of
