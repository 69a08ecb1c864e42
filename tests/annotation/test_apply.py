"""Applying aggregated labels, on a workspace database seeded by hand (no server):
benchmark tiers, orthogonality filter, label accuracy, helpfulness and non-distraction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

import pytest
from sqlmodel import Session, select

from annotation.apply import apply_study, study_status
from annotation.kinds import ApplyResult
from storage.models import CurationVote, Question
from storage.repo.annotations import (
    create_study,
    get_or_create_annotator,
    upsert_human_annotation,
    upsert_study_task,
)
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.human.curation import CurationResult, OrthogonalityResult, compute_tiers
from study.reasoning.human.responses import DistractionResult, HelpfulnessResult, LabelCheckResult

PASS = {
    "clear": "yes",
    "no_vague_terms": "yes",
    "single_verifiable_answer": "no",
    "answerable_by_restating": "no",
}


R = TypeVar("R", bound=ApplyResult)


def _applied(name: str, kind: type[R], session: Session) -> R:
    """Apply a study and check its kind's result type."""
    result = apply_study(name, session=session)
    assert isinstance(result, kind), type(result)
    return result


@pytest.fixture
def session() -> Iterator[Session]:
    with open_workspace_session(resolve_settings()) as s:
        yield s


def _result(answers: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"from_name": k, "to_name": "x", "type": "choices", "value": {"choices": [v]}}
        for k, v in answers.items()
    ]


class Seeder:
    """Writes a study, its tasks and annotations as a pull would."""

    def __init__(self, session: Session, name: str) -> None:
        self.session = session
        self.study = create_study(name, ls_project_id=abs(hash(name)) % 10**6, session=session)
        self.next_id = 1000 * (
            1
            + list(
                (
                    "question_checks",
                    "persona_pair",
                    "orthogonality",
                    "label_check",
                    "helpfulness",
                    "distraction",
                )
            ).index(name)
        )

    def task(
        self, key: str, payload: dict[str, Any], votes: list[tuple[int, dict[str, str], float]]
    ) -> None:
        assert self.study.id is not None
        task = upsert_study_task(self.study.id, key, payload=payload, session=self.session)
        assert task.id is not None
        for user, answers, lead in votes:
            annotator = get_or_create_annotator(
                user, email=f"u{user}@example.org", session=self.session
            )
            self.next_id += 1
            upsert_human_annotation(
                ls_annotation_id=self.next_id,
                study_task_id=task.id,
                annotator_id=annotator.id,
                result=_result(answers),
                lead_time=lead,
                session=self.session,
            )


def _questions(session: Session, n: int) -> list[Question]:
    rows = [Question(external_id=f"q{i}", text=f"Question {i}?") for i in range(n)]
    session.add_all(rows)
    session.flush()
    return rows


def test_tiers_core_relaxed_and_out(session: Session) -> None:
    qs = _questions(session, 4)
    seed = Seeder(session, "question_checks")
    unclear = {**PASS, "clear": "no"}
    seed.task("question:q0", {"question_id": "q0"}, [(1, PASS, 30), (2, PASS, 30), (3, PASS, 30)])
    seed.task(
        "question:q1", {"question_id": "q1"}, [(1, PASS, 30), (2, PASS, 30), (3, unclear, 30)]
    )
    # The dissenting vote is too fast and dropped: two passing votes remain -> relaxed.
    seed.task("question:q2", {"question_id": "q2"}, [(1, unclear, 3), (2, PASS, 30), (3, PASS, 30)])
    seed.task(
        "question:q3", {"question_id": "q3"}, [(1, unclear, 30), (2, unclear, 30), (3, PASS, 30)]
    )
    result = _applied("question_checks", CurationResult, session)
    tiers = {q.external_id: q.tier for q in session.exec(select(Question))}
    assert tiers == {"q0": "core", "q1": "relaxed", "q2": "relaxed", "q3": None}
    assert result.tiers == {"core": 1, "relaxed": 2, "none": 1}
    assert {c.question_id for c in result.tier_changes} == {"q0", "q1", "q2"}
    votes = session.exec(select(CurationVote)).all()
    assert len(votes) == 11 * 4  # the fast annotation's four votes are not stored
    assert {v.annotator for v in votes} == {"u1@example.org", "u2@example.org", "u3@example.org"}
    assert all(v.human_annotation_id is not None for v in votes)
    # Applying again changes nothing.
    again = _applied("question_checks", CurationResult, session)
    assert again.tier_changes == ()
    assert len(session.exec(select(CurationVote)).all()) == 44

    # A persona-pair "No" majority takes q0 out; a unanimous "Yes" keeps it core.
    pair = Seeder(session, "persona_pair")
    no = {"same_answer": "no"}
    pair.task(
        "question:q0:pair:age",
        {"question_id": "q0", "dimension": "age"},
        [(1, no, 30), (2, no, 30), (3, {"same_answer": "yes"}, 30)],
    )
    apply_study("persona_pair", session=session)
    assert session.get(Question, qs[0].id).tier is None  # type: ignore[union-attr]
    assert compute_tiers([qs[1].id], session=session)[qs[1].id] == "relaxed"  # type: ignore[index,list-item]


def test_orthogonality_keeps_mean_confidence_above_058(session: Session) -> None:
    seed = Seeder(session, "orthogonality")
    p = {"question_id": "q0", "perturbation_key": "teacher", "category": "occupation"}
    # (0.9 + 0.6 + (1 - 0.8)) / 3 = 0.5667 -> removed
    seed.task(
        "a",
        p,
        [
            (1, {"irrelevant": "yes", "confidence": "0.9"}, 20),
            (2, {"irrelevant": "yes", "confidence": "0.6"}, 20),
            (3, {"irrelevant": "no", "confidence": "0.8"}, 20),
        ],
    )
    # (0.7 + 0.5 + 0.6) / 3 = 0.6 -> kept
    seed.task(
        "b",
        p,
        [
            (1, {"irrelevant": "yes", "confidence": "0.7"}, 20),
            (2, {"irrelevant": "unsure", "confidence": "1.0"}, 20),
            (3, {"irrelevant": "yes", "confidence": "0.6"}, 20),
        ],
    )
    out = {o.key: o for o in _applied("orthogonality", OrthogonalityResult, session).orthogonality}
    assert out["a"].mean_confidence == pytest.approx(1.7 / 3) and not out["a"].keep
    assert out["b"].mean_confidence == pytest.approx(0.6) and out["b"].keep


def test_label_accuracy_per_labeler(session: Session) -> None:
    seed = Seeder(session, "label_check")
    yes, no = {"agree": "yes"}, {"agree": "no", "better_leaf": "Security and stability"}
    seed.task("s1", {"labeler": "llm-a"}, [(1, yes, 20), (2, yes, 20), (3, no, 20)])
    seed.task("s2", {"labeler": "llm-a"}, [(1, no, 20), (2, no, 20), (3, yes, 20)])
    seed.task("s3", {"labeler": "llm-b"}, [(1, yes, 20), (2, yes, 20), (3, yes, 20)])
    applied = _applied("label_check", LabelCheckResult, session)
    acc = {a.labeler: a for a in applied.labeler_accuracy}
    assert (acc["llm-a"].decided, acc["llm-a"].yes, acc["llm-a"].accuracy) == (2, 1, 0.5)
    assert acc["llm-b"].accuracy == 1.0


def test_helpfulness_means_and_non_distraction_rates(session: Session) -> None:
    meta = {"model": "sim/a", "condition_class": "attribute", "condition": "teacher"}
    help_ = Seeder(session, "helpfulness")
    help_.task(
        "r1", meta, [(1, {"score": "4"}, 20), (2, {"score": "3"}, 20), (3, {"score": "4"}, 20)]
    )
    help_.task(
        "r2", meta, [(1, {"score": "1"}, 20), (2, {"score": "2"}, 20), (3, {"score": "0"}, 5)]
    )  # the 0 is too fast
    rates = _applied("helpfulness", HelpfulnessResult, session).helpfulness
    assert len(rates) == 1 and rates[0].items == 2
    assert rates[0].value == pytest.approx(((4 + 3 + 4) / 3 + (1 + 2) / 2) / 2)

    dis = Seeder(session, "distraction")
    dis.task("d1", meta, [(1, {"step": "no"}, 20), (2, {"step": "no"}, 20), (3, {"step": "2"}, 20)])
    dis.task("d2", meta, [(1, {"step": "1"}, 20), (2, {"step": "2"}, 20), (3, {"step": "no"}, 20)])
    dis.task("d3", meta, [(1, {"step": "3"}, 20), (2, {"step": "3"}, 20)])
    result = _applied("distraction", DistractionResult, session)
    assert result.non_distraction[0].value == pytest.approx(1 / 3)
    assert result.non_distraction_by_class[0].condition == "*"
    status = study_status("distraction", session=session)
    assert (status.tasks, status.annotations, len(status.annotators)) == (3, 8, 3)
    assert status.disagreement_rate == pytest.approx(2 / 3)
