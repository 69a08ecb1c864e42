"""Streaming labeling and analysis give exactly what reading everything at once gave.

The references below are the straightforward versions (every response and label in
memory at once, as the code did before it streamed); the streamed code runs with tiny
chunks so every chunk boundary is crossed many times.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pandas.testing import assert_frame_equal
from sqlmodel import Session, col, delete, select

from llm.specs import ModelSpec
from ontology.labelers.registry import ensure_labeler_spec, make_labeler
from ontology.versions import document, get_version
from storage.models import Question, Response, StepLabel
from storage.repo.runs import require_run
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.questions import QuestionRow, store_questions
from study.reasoning.drift import Trajectory, build_drift_table
from study.reasoning.drift_files import condition_category, pair_frame
from study.reasoning.examples import EXAMPLE_CLASSES, choose_examples
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.trajectories import (
    drift_table_by_run,
    label_run,
    load_trajectories,
    run_labels,
)

QUESTIONS = [
    "Should a small team rewrite a working legacy system or keep patching it?",
    "Is it better to rent or to buy a home when prices are high?",
    "How should someone weigh a higher salary against a longer commute?",
]
RUNS = {"r-default": "sim/default", "r-strong": "sim/strong", "r-again": "sim/default"}


def _reference_trajectories(run_name: str, label: str, *, session: Session) -> list[Trajectory]:
    """The pre-streaming reader: whole responses and every label of the run at once."""
    version = get_version(None, session=session)
    doc = document(version)
    spec = ensure_labeler_spec("keywords", session=session)
    run = require_run(run_name, session=session)
    labels: dict[int, dict[int, str]] = {}
    for rid, step, symbol in session.exec(
        select(StepLabel.response_id, StepLabel.step_index, StepLabel.symbol)
        .join(Response, col(Response.id) == col(StepLabel.response_id))
        .where(Response.run_id == run.id, StepLabel.labeler_id == spec.id)
        .where(StepLabel.ontology_version_id == version.id, StepLabel.repeat == 0)
    ):
        labels.setdefault(rid, {})[step] = symbol
    out = []
    for response, key in session.exec(
        select(Response, Question.external_id)
        .join(Question, col(Question.id) == col(Response.question_id))
        .where(Response.run_id == run.id)
    ):
        got = labels.get(response.id or -1)
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
                label,
                key,
                response.condition,
                response.condition_class,
                response.sample,
                symbols,
                usable,
                reason,
            )
        )
    return out


def _reference_examples(pairs: pd.DataFrame, per_class: int) -> list[dict[str, Any]]:
    """The pre-streaming example choice: walk every sorted row, skip seen categories."""
    df = pairs.assign(category=pairs["condition"].map(condition_category))
    chosen = []
    for klass in EXAMPLE_CLASSES:
        sub = df[df["condition_class"] == klass].sort_values(
            ["dtw", "question_id", "condition", "sample"],
            ascending=[False, True, True, True],
            kind="stable",
        )
        seen: set[str] = set()
        for rec in sub.to_dict(orient="records"):
            if rec["category"] in seen:
                continue
            seen.add(rec["category"])
            chosen.append(
                {
                    k: rec[k]
                    for k in (
                        "model",
                        "question_id",
                        "condition",
                        "category",
                        "condition_class",
                        "sample",
                        "dtw",
                        "sri",
                    )
                }
            )
            if len(seen) >= per_class:
                break
    return chosen


def _key(t: Trajectory) -> tuple[str, str, str, int]:
    return (t.model, t.question_id, t.condition, t.sample)


def test_streamed_labels_trajectories_drift_and_examples_match_the_whole_reads() -> None:
    with open_workspace_session(resolve_settings()) as session:
        rows = [QuestionRow(f"q{i}", text, (), i + 1) for i, text in enumerate(QUESTIONS)]
        store_questions(rows, session=session, source="test")
        for run, model in RUNS.items():
            run_generation(
                GenerationOptions(
                    model=ModelSpec.parse(model),
                    run=run,
                    perturbations="age,filler,job_loss",
                    samples=2,
                ),
                session=session,
            )
            summary = label_run(run, "keywords", session=session, batch_size=7)
            assert summary.labeled_now > 0 and summary.failed == 0

        # Labels: exactly what the labeler gives each response's steps.
        doc = document(get_version(None, session=session))
        labeler = make_labeler("keywords")
        for response in session.exec(select(Response)):
            stored = session.exec(
                select(StepLabel.step_index, StepLabel.symbol)
                .where(StepLabel.response_id == response.id)
                .order_by(col(StepLabel.step_index))
            ).all()
            expected = [
                (r.step_index, r.symbol) for r in labeler.label_steps(response.steps, ontology=doc)
            ]
            assert list(stored) == expected

        # Unusable responses of every kind: labels lost, request failed, no steps.
        first, second, third = session.exec(select(Response).order_by(col(Response.id))).all()[5:8]
        session.exec(delete(StepLabel).where(col(StepLabel.response_id) == first.id))
        second.error, second.text = "boom", None
        third.steps = []
        session.add_all([second, third])
        session.commit()

        version = get_version(None, session=session)
        run_of = run_labels(list(RUNS), session=session)
        assert set(run_of) == {"sim/default [r-default]", "sim/strong", "sim/default [r-again]"}
        reference: list[Trajectory] = []
        for label, labeled_run in run_of.items():
            streamed = load_trajectories(
                labeled_run.name, "keywords", session=session, model_label=label, chunk=5
            )
            whole = _reference_trajectories(labeled_run.name, label, session=session)
            assert sorted(streamed, key=_key) == sorted(whole, key=_key)
            reference.extend(whole)
        reasons = {t.reason for t in reference}
        assert {"", "not_labeled", "request_failed", "no_steps"} <= reasons

        by_run = drift_table_by_run(run_of, "keywords", session=session, version=version, alpha=0.5)
        at_once = build_drift_table(reference, alpha=0.5)
        assert by_run.skipped == at_once.skipped
        assert_frame_equal(pair_frame(by_run.rows), pair_frame(at_once.rows))
        for per_class in (1, 2, 3):
            assert choose_examples(by_run.rows, per_class=per_class) == _reference_examples(
                at_once.rows, per_class
            )
