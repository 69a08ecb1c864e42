"""Queries of the human-studies room (tasks, annotations and the rows tasks are built from).

Complements ``storage.repo.annotations`` (the Label Studio mirror's upserts). Like every
repository module it never commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from storage.models import (
    Annotator,
    CurationVote,
    GenerationRun,
    HumanAnnotation,
    LabelerSpec,
    ModelSpecRow,
    OntologyLeaf,
    OntologyVersion,
    Perturbation,
    PerturbationCatalog,
    Question,
    Response,
    StepLabel,
    Study,
    StudyTask,
)
from storage.repo.chunks import id_chunks
from storage.step_spans import step_count_sql


def latest_study(name: str, *, session: Session) -> Study | None:
    """The newest study of a kind (one project per kind and workspace is the norm)."""
    stmt = select(Study).where(Study.name == name).order_by(col(Study.id).desc())
    return session.exec(stmt).first()


def tasks_by_key(study_id: int, *, session: Session) -> dict[str, StudyTask]:
    """A study's tasks keyed by their external key."""
    stmt = select(StudyTask).where(StudyTask.study_id == study_id)
    return {t.external_key: t for t in session.exec(stmt)}


def add_study_task(
    study_id: int,
    external_key: str,
    *,
    payload: dict[str, object],
    ls_task_id: int | None,
    session: Session,
) -> StudyTask:
    """Insert a task row (the caller checked that the key is new)."""
    row = StudyTask(
        study_id=study_id, external_key=external_key, payload=payload, ls_task_id=ls_task_id
    )
    session.add(row)
    session.flush()
    return row


def study_annotations(
    study_id: int, *, session: Session
) -> list[tuple[StudyTask, HumanAnnotation, Annotator | None]]:
    """Every stored annotation of a study with its task and annotator."""
    stmt = (
        select(StudyTask, HumanAnnotation, Annotator)
        .join(HumanAnnotation, col(HumanAnnotation.study_task_id) == col(StudyTask.id))
        .outerjoin(Annotator, col(Annotator.id) == col(HumanAnnotation.annotator_id))
        .where(StudyTask.study_id == study_id)
        .order_by(col(StudyTask.id), col(HumanAnnotation.ls_annotation_id))
    )
    return [(t, a, u) for t, a, u in session.exec(stmt)]


def count_study_tasks(study_id: int, *, session: Session) -> int:
    """How many tasks a study has."""
    stmt = select(func.count()).select_from(StudyTask).where(StudyTask.study_id == study_id)
    return int(session.exec(stmt).one())


def annotations_of_tasks(task_ids: Sequence[int], *, session: Session) -> list[HumanAnnotation]:
    """Stored annotations of the given task ids."""
    out: list[HumanAnnotation] = []
    for chunk in id_chunks(task_ids):
        stmt = select(HumanAnnotation).where(col(HumanAnnotation.study_task_id).in_(chunk))
        out.extend(session.exec(stmt))
    return out


def delete_labelstudio_votes(
    question_ids: Sequence[int], criteria: Sequence[str], *, session: Session
) -> int:
    """Remove Label Studio-sourced votes of these questions and criteria (before re-applying)."""
    removed = 0
    for chunk in id_chunks(question_ids):
        stmt = delete(CurationVote).where(
            col(CurationVote.question_id).in_(chunk),
            col(CurationVote.criterion).in_(list(criteria)),
            col(CurationVote.source) == "labelstudio",
        )
        removed += int(session.execute(stmt).rowcount or 0)  # type: ignore[attr-defined]
    session.flush()
    return removed


# ------------------------------------------------------------- rows tasks are built from


def select_questions(
    *,
    session: Session,
    external_ids: Sequence[str] = (),
    filter_label: str | None = None,
    tier: str | None = None,
) -> list[Question]:
    """Questions by external id, LLM-filter label and tier (``"none"``: no tier yet).

    Instrument-owned rows (a memory bank's request) are not benchmark questions and are
    never selected.
    """
    from storage.repo.questions import benchmark_only

    stmt = select(Question).where(benchmark_only())
    if external_ids:
        stmt = stmt.where(col(Question.external_id).in_(list(external_ids)))
    if filter_label:
        stmt = stmt.where(Question.filter_label == filter_label)
    if tier == "none":
        stmt = stmt.where(col(Question.tier).is_(None))
    elif tier:
        stmt = stmt.where(Question.tier == tier)
    return list(session.exec(stmt.order_by(col(Question.id))))


def select_perturbations(
    *, session: Session, catalog: str | None = None, condition_class: str | None = None
) -> list[tuple[PerturbationCatalog, Perturbation]]:
    """Perturbations of the newest catalog (of that name, when given)."""
    stmt = select(PerturbationCatalog)
    if catalog:
        stmt = stmt.where(PerturbationCatalog.name == catalog)
    cat = session.exec(stmt.order_by(col(PerturbationCatalog.id).desc())).first()
    if cat is None:
        return []
    pstmt = select(Perturbation).where(Perturbation.catalog_id == cat.id)
    if condition_class:
        pstmt = pstmt.where(Perturbation.condition_class == condition_class)
    return [(cat, p) for p in session.exec(pstmt.order_by(col(Perturbation.id)))]


def select_responses(
    *,
    session: Session,
    run: str | None = None,
    conditions: Sequence[str] = (),
    condition_class: str | None = None,
    perturbed_only: bool = False,
) -> list[tuple[Response, GenerationRun, ModelSpecRow, Question, Perturbation | None]]:
    """Responses with their run, model, question and perturbation (if any)."""
    stmt = (
        sa_select(Response, GenerationRun, ModelSpecRow, Question, Perturbation)
        .join(GenerationRun, col(GenerationRun.id) == col(Response.run_id))
        .join(ModelSpecRow, col(ModelSpecRow.id) == col(GenerationRun.model_spec_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .outerjoin(Perturbation, col(Perturbation.id) == col(Response.perturbation_id))
    )
    if run:
        stmt = stmt.where(col(GenerationRun.name) == run)
    if conditions:
        stmt = stmt.where(col(Response.condition).in_(list(conditions)))
    if condition_class:
        stmt = stmt.where(col(Response.condition_class) == condition_class)
    if perturbed_only:
        stmt = stmt.where(col(Response.perturbation_id).is_not(None))
    # More entities than sqlmodel's select() overloads take: plain SQLAlchemy rows.
    return [tuple(row) for row in session.execute(stmt.order_by(col(Response.id)))]


#: Step-label ids per ``IN`` list when reading chosen labels (well under any bound-parameter cap).
_ID_CHUNK = 500


def _step_label_filters(
    stmt: Any,
    session: Session,
    run: str | None,
    labeler: str | None,
    ontology_version_id: int | None,
) -> Any:
    """The joins and filters a label check selects by, on a query that names ``StepLabel``.

    A label whose step index lies outside its response's parsed steps (the steps were
    parsed again since) is left out, in SQL, so counting needs no response loaded.
    """
    stmt = (
        stmt.join(LabelerSpec, col(LabelerSpec.id) == col(StepLabel.labeler_id))
        .join(OntologyVersion, col(OntologyVersion.id) == col(StepLabel.ontology_version_id))
        .join(Response, col(Response.id) == col(StepLabel.response_id))
        .join(GenerationRun, col(GenerationRun.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .where(col(StepLabel.step_index) >= 0)
        .where(col(StepLabel.step_index) < step_count_sql(session, Response.steps))
    )
    if run:
        stmt = stmt.where(col(GenerationRun.name) == run)
    if labeler:
        stmt = stmt.where((col(LabelerSpec.name) == labeler) | (col(LabelerSpec.key) == labeler))
    if ontology_version_id is not None:
        stmt = stmt.where(col(StepLabel.ontology_version_id) == ontology_version_id)
    return stmt


def select_step_labels(
    *,
    session: Session,
    run: str | None = None,
    labeler: str | None = None,
    ontology_version_id: int | None = None,
    ids: Sequence[int] | None = None,
) -> list[tuple[StepLabel, LabelerSpec, OntologyVersion, Response, GenerationRun, Question]]:
    """Step labels with what a label check shows (labeler by name or key), by label id.

    Only labels of a parsed step (see :func:`_step_label_filters`). ``ids`` reads just
    those labels (a limited selection's), in chunks, instead of every label the filters match.
    """
    base = sa_select(StepLabel, LabelerSpec, OntologyVersion, Response, GenerationRun, Question)
    stmt = _step_label_filters(base, session, run, labeler, ontology_version_id)
    if ids is None:
        return [tuple(row) for row in session.execute(stmt.order_by(col(StepLabel.id)))]
    wanted = sorted(set(ids))
    out: list[Any] = []
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        part = stmt.where(col(StepLabel.id).in_(chunk)).order_by(col(StepLabel.id))
        out.extend(tuple(row) for row in session.execute(part))
    return out


@dataclass(frozen=True)
class StepLabelKey:
    """What names one step label across workspaces (external ids and names), and its row id."""

    id: int
    run: str
    question: str
    condition: str
    sample: int
    step_index: int
    labeler_key: str
    ontology: str
    version: int
    repeat: int


def iter_step_label_keys(
    *,
    session: Session,
    run: str | None = None,
    labeler: str | None = None,
    ontology_version_id: int | None = None,
) -> Iterator[StepLabelKey]:
    """The labels :func:`select_step_labels` selects, as names only, streamed in id order.

    Reads no response text or steps, so a limit can be chosen over a run's every label
    without building (or holding) a task per label.
    """
    names = (
        StepLabel.id,
        GenerationRun.name,
        Question.external_id,
        Response.condition,
        Response.sample,
        StepLabel.step_index,
        LabelerSpec.key,
        OntologyVersion.name,
        OntologyVersion.version,
        StepLabel.repeat,
    )
    columns = sa_select(*(col(c) for c in names)).select_from(StepLabel)
    stmt = _step_label_filters(columns, session, run, labeler, ontology_version_id)
    rows = session.execute(stmt.order_by(col(StepLabel.id)).execution_options(yield_per=5_000))
    for row in rows:
        yield StepLabelKey(*row)


def count_step_labels(
    *,
    session: Session,
    run: str | None = None,
    labeler: str | None = None,
    ontology_version_id: int | None = None,
) -> int:
    """How many labels :func:`select_step_labels` selects (one COUNT query)."""
    counted = sa_select(func.count(col(StepLabel.id))).select_from(StepLabel)
    stmt = _step_label_filters(counted, session, run, labeler, ontology_version_id)
    return int(session.execute(stmt).scalar_one())


def leaf_definitions(version_id: int, *, session: Session) -> dict[str, OntologyLeaf]:
    """The leaves of an ontology version by leaf name."""
    stmt = select(OntologyLeaf).where(OntologyLeaf.version_id == version_id)
    return {leaf.leaf: leaf for leaf in session.exec(stmt)}


def find_ontology_version(
    name: str, version: int | None, *, session: Session
) -> OntologyVersion | None:
    """An ontology version by name (newest when ``version`` is None)."""
    stmt = select(OntologyVersion).where(OntologyVersion.name == name)
    if version is not None:
        stmt = stmt.where(OntologyVersion.version == version)
    return session.exec(stmt.order_by(col(OntologyVersion.version).desc())).first()


def questions_by_external_id(
    external_ids: Sequence[str], *, session: Session
) -> dict[str, Question]:
    """Questions keyed by external id."""
    out: dict[str, Question] = {}
    for chunk in id_chunks(external_ids):
        stmt = select(Question).where(col(Question.external_id).in_(chunk))
        out.update({q.external_id: q for q in session.exec(stmt)})
    return out
