"""Study status and applying aggregated human labels back to the workbench, through the kinds.

The generic half of every study: load a study's stored annotations, stop on answers of an
earlier form, aggregate them (:mod:`annotation.aggregate`), count what was pulled
(:func:`study_status`) and hand the aggregate to the study kind's own apply step
(:func:`apply_study`; each kind's rule and result type are documented in its module under
``study/<instrument>/human/``).
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from annotation.aggregate import (
    AggregationConfig,
    AnnotationRecord,
    StudyAggregate,
    aggregate,
    extract_answers,
)
from annotation.kinds import ApplyResult, get_kind, get_spec
from annotation.studies import StudySpec
from storage.errors import InputError, NotFoundError
from storage.models import Study
from storage.repo import studies as repo


@dataclass(frozen=True)
class StudyStatus:
    """What ``annotate status`` reports."""

    study: str
    project_id: int | None
    ls_url: str | None
    tasks: int
    annotations: int
    annotators: tuple[str, ...]
    kept: int
    dropped_fast: int
    items_with_label: int
    items_unanimous: int
    krippendorff_alpha: float | None
    alpha_by_question: dict[str, float | None]
    disagreement_rate: float | None
    min_lead_time_s: float
    #: rating studies only (``None`` otherwise): the ``min_ratings`` asked for, how many
    #: tasks have at least that many kept ratings (what ``apply`` counts), and how many
    #: tasks have each number of kept ratings (0 = none yet)
    min_ratings: int | None = None
    items_with_min_ratings: int | None = None
    ratings_per_task: dict[int, int] | None = None


def require_study(name: str, *, session: Session) -> Study:
    """The workspace's study of this kind.

    Raises:
        InputError: unknown study kind.
        NotFoundError: nothing was pushed for it yet.
    """
    get_spec(name)
    study = repo.latest_study(name, session=session)
    if study is None:
        raise NotFoundError(
            f"Study {name} has not been pushed yet; run "
            f"`{shlex.join(['driftlens', 'annotate', 'push', name])}` first."
        )
    return study


def annotator_label(email: str | None, ls_user_id: int | None, annotation_id: int) -> str:
    """How an annotator is named everywhere: the e-mail, else the Label Studio user id."""
    if email:
        return email
    if ls_user_id is not None:
        return f"user-{ls_user_id}"
    return f"unknown-annotator-{annotation_id}"


def load_records(study: Study, *, session: Session) -> list[AnnotationRecord]:
    """The study's stored annotations as aggregation records."""
    assert study.id is not None
    out = []
    for task, ann, annotator in repo.study_annotations(study.id, session=session):
        out.append(
            AnnotationRecord(
                item=task.external_key,
                annotation_id=ann.ls_annotation_id,
                annotator=annotator_label(
                    annotator.email if annotator else None,
                    annotator.ls_user_id if annotator else None,
                    ann.ls_annotation_id,
                ),
                result=ann.result,
                lead_time=ann.lead_time,
                updated_at=ann.ls_updated_at,
                payload=task.payload,
            )
        )
    return out


def legacy_answers(spec: StudySpec, records: Sequence[AnnotationRecord]) -> int:
    """How many annotations answer with a value of the study's earlier form."""
    legacy = {q: {v.lower() for v in values} for q, values in spec.legacy_values}
    if not legacy:
        return 0
    n = 0
    for rec in records:
        answers = extract_answers(spec, rec.result)
        n += any(answers.get(q, "").strip().lower() in vals for q, vals in legacy.items())
    return n


def legacy_form_message(study: Study, n: int) -> str:
    """The one sentence for a project made with an earlier form of its study."""
    spec = get_spec(study.name)
    project = (
        f"Label Studio project {study.ls_project_id}"
        if study.ls_project_id is not None
        else "its Label Studio project"
    )
    now = ", ".join(q.prompt for q in spec.agreement_questions)
    return (
        f"Study {study.name} ({project}) was made with {spec.legacy_form or 'an earlier form'}, "
        f"which the current form ({now}) cannot read: its {n} old annotations stay stored "
        f"and are not counted; push a fresh project with `driftlens annotate push "
        f"{study.name} --new-project` (with the same --select as before) and have the "
        "answers annotated again."
    )


def legacy_form_note(study: Study, *, session: Session) -> str | None:
    """:func:`legacy_form_message` when the study's stored annotations use an earlier form."""
    n = legacy_answers(get_spec(study.name), load_records(study, session=session))
    return legacy_form_message(study, n) if n else None


def study_aggregate(
    name: str, *, session: Session, config: AggregationConfig | None = None
) -> tuple[Study, StudyAggregate]:
    """Aggregate the stored annotations of a study.

    Raises:
        InputError: the study's project was made with an earlier form whose answers the
            current one cannot read (e.g. yes/no ``test_awareness``): one sentence saying
            what to do, never a misread number.
    """
    study = require_study(name, session=session)
    records = load_records(study, session=session)
    n = legacy_answers(get_spec(name), records)
    if n:
        raise InputError(legacy_form_message(study, n))
    return study, aggregate(get_spec(name), records, config)


def study_status(
    name: str, *, session: Session, config: AggregationConfig | None = None
) -> StudyStatus:
    """Counts, agreement and disagreement of a study (from what was pulled)."""
    study, agg = study_aggregate(name, session=session, config=config)
    assert study.id is not None
    spec = get_spec(name)
    labelled = sum(
        1
        for it in agg.items
        if all(
            (o := it.outcome(q.name)) is not None and o.label is not None
            for q in spec.agreement_questions
        )
    )
    unanimous = sum(
        1
        for it in agg.items
        if all(
            (o := it.outcome(q.name)) is not None and o.unanimous for q in spec.agreement_questions
        )
    )
    every = load_records(study, session=session)
    tasks = repo.count_study_tasks(study.id, session=session)
    rating: dict[str, Any] = {}
    if spec.rating_question is not None:
        need = max(1, agg.config.min_ratings)
        counts: dict[int, int] = defaultdict(int)
        for it in agg.items:
            o = it.outcome(spec.rating_question)
            counts[o.n_votes if o is not None else 0] += 1
        # tasks nobody annotated have no item in the aggregate
        counts[0] += max(0, tasks - len(agg.items))
        rating = {
            "min_ratings": need,
            "items_with_min_ratings": sum(v for k, v in counts.items() if k >= need),
            "ratings_per_task": {k: counts[k] for k in sorted(counts) if counts[k]},
        }
    return StudyStatus(
        study=name,
        project_id=study.ls_project_id,
        ls_url=study.ls_url,
        tasks=tasks,
        annotations=agg.n_annotations,
        annotators=tuple(sorted({r.annotator for r in every})),
        kept=agg.n_kept,
        dropped_fast=agg.n_dropped_fast,
        items_with_label=labelled,
        items_unanimous=unanimous,
        krippendorff_alpha=agg.alpha,
        alpha_by_question=dict(agg.alpha_by_question),
        disagreement_rate=agg.disagreement_rate,
        min_lead_time_s=agg.config.min_lead_time_s,
        **rating,
    )


def apply_study(
    name: str, *, session: Session, config: AggregationConfig | None = None
) -> ApplyResult:
    """Aggregate a study and apply the result (see the module docstring)."""
    config = config or AggregationConfig()
    _, agg = study_aggregate(name, session=session, config=config)
    return get_kind(name).apply(agg, session, config)


def study_id(name: str, session: Session) -> int:
    """The row id of the workspace's study of this kind."""
    study = require_study(name, session=session)
    assert study.id is not None
    return study.id


def item_rows(agg: StudyAggregate) -> list[dict[str, Any]]:
    """Every item with its key, each question's votes, 2-of-3 label and unanimity (JSON-ready)."""
    rows = []
    for it in agg.items:
        rows.append(
            {
                "key": it.key,
                "annotators": list(it.annotators),
                "dropped_fast": it.dropped_fast,
                "disagreement_rate": it.disagreement_rate,
                "questions": {
                    o.question: {
                        "votes": {a: v for a, v in o.votes},
                        "label": o.label,
                        "unanimous": o.unanimous,
                        "confidence": o.confidence,
                    }
                    for o in it.questions
                },
            }
        )
    return rows
