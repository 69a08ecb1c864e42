"""The example response pairs a drift report shows (largest DTW per condition class)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlmodel import Session, select

from ontology.schema import OntologyDoc
from ontology.versions import document
from storage.models import (
    BASELINE_CONDITION,
    GenerationRun,
    OntologyVersion,
    Perturbation,
    Question,
    Response,
)
from storage.repo.labels import step_labels_for
from study.reasoning.drift_files import condition_category
from study.reasoning.report import ExamplePair, StepView
from study.reasoning.report.data import step_views

EXAMPLE_CLASSES: tuple[str, ...] = ("life_event", "attribute", "noise")


def _views(
    response: Response | None, labels: dict[int, dict[int, str]], doc: OntologyDoc
) -> tuple[StepView, ...]:
    if response is None:
        return ()
    return step_views(response.steps, labels.get(response.id or -1, {}), doc.root_of)


def choose_examples(pairs: pd.DataFrame, *, per_class: int) -> list[dict[str, Any]]:
    """The example pairs to show: per class, the largest-DTW pairs of distinct categories.

    The choice is deterministic (ties broken by question, condition, sample) so the same
    analysis shows the same examples. Returned as plain JSON-able records (model,
    question_id, condition, category, condition_class, sample, dtw, sri), which an
    analysis stores so its page never rebuilds the drift table to find them.
    """
    if pairs.empty or per_class <= 0:
        return []
    df = pairs.assign(category=pairs["condition"].map(condition_category))
    chosen: list[dict[str, Any]] = []
    for klass in EXAMPLE_CLASSES:
        sub = df[df["condition_class"] == klass].sort_values(
            ["dtw", "question_id", "condition", "sample"],
            ascending=[False, True, True, True],
            kind="stable",
        )
        # The first (largest) row of each category, categories in that order.
        top = sub.drop_duplicates("category").head(per_class)
        chosen.extend(
            {
                "model": str(r["model"]),
                "question_id": str(r["question_id"]),
                "condition": str(r["condition"]),
                "category": str(r["category"]),
                "condition_class": str(r["condition_class"]),
                "sample": int(r["sample"]),
                "dtw": float(r["dtw"]),
                "sri": float(r["sri"]),
            }
            for r in top.to_dict(orient="records")
        )
    return chosen


def select_examples(
    pairs: pd.DataFrame,
    *,
    run_of: dict[str, GenerationRun],
    labeler_id: int,
    version: OntologyVersion,
    per_class: int,
    session: Session,
) -> tuple[ExamplePair, ...]:
    """Pick example pairs (:func:`choose_examples`) and read them (:func:`example_pairs`).

    Args:
        pairs: the pair table (``model`` holds the model label of :func:`load_runs`).
        run_of: model label → the run its responses belong to.
        labeler_id: the labeler whose labels to show.
        version: the ontology version of the labels.
        per_class: examples per condition class.
        session: open session.
    """
    return example_pairs(
        choose_examples(pairs, per_class=per_class),
        run_of=run_of,
        labeler_id=labeler_id,
        version=version,
        session=session,
    )


def example_pairs(
    chosen: Sequence[dict[str, Any]],
    *,
    run_of: dict[str, GenerationRun],
    labeler_id: int,
    version: OntologyVersion,
    session: Session,
) -> tuple[ExamplePair, ...]:
    """The chosen example records with their responses, steps and labels (a few queries)."""
    if not chosen:
        return ()
    doc = document(version)
    out: list[ExamplePair] = []
    for rec in chosen:
        run = run_of.get(str(rec["model"]))
        if run is None:
            continue
        question = session.exec(
            select(Question).where(Question.external_id == str(rec["question_id"]))
        ).first()
        if question is None:
            continue

        def response(
            condition: str, sample: int, question_id: int, run_id: int | None = run.id
        ) -> Response | None:
            return session.exec(
                select(Response)
                .where(Response.run_id == run_id)
                .where(Response.question_id == question_id)
                .where(Response.condition == condition)
                .where(Response.sample == sample)
            ).first()

        assert question.id is not None
        base = response(BASELINE_CONDITION, 0, question.id)
        other = response(str(rec["condition"]), int(rec["sample"]), question.id)
        ids = [r.id for r in (base, other) if r is not None and r.id is not None]
        labels = {
            rid: {lab.step_index: lab.symbol for lab in labs}
            for rid, labs in step_labels_for(
                ids, labeler_id=labeler_id, ontology_version_id=version.id or 0, session=session
            ).items()
        }
        memory = ""
        if other is not None and other.perturbation_id is not None:
            pert = session.get(Perturbation, other.perturbation_id)
            memory = pert.text if pert is not None else ""
        out.append(
            ExamplePair(
                model=str(rec["model"]),
                question_id=str(rec["question_id"]),
                question=question.text,
                condition=str(rec["condition"]),
                category=str(rec["category"]),
                condition_class=str(rec["condition_class"]),
                memory=memory,
                sample=int(rec["sample"]),
                dtw=float(rec["dtw"]),
                sri=float(rec["sri"]),
                baseline=_views(base, labels, doc),
                perturbed=_views(other, labels, doc),
                baseline_answer=(base.answer or "") if base else "",
                perturbed_answer=(other.answer or "") if other else "",
            )
        )
    return tuple(out)
