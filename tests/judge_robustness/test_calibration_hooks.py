"""Each study kind's judge-vs-human pairing, on annotations stored in the database as a
pull writes them (no Label Studio server: the aggregation's input is a plain table).

Checked against independent oracles: sklearn's ``cohen_kappa_score`` on the full scale
(quadratic weights on the ordinal ones) and the ``krippendorff`` package.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from sqlmodel import Session, select
from typer.testing import Result

from annotation.tasks import response_key
from storage.errors import DriftLensError, InputError
from storage.models import ConflictBank, GenerationRun, JudgeScore, Question, Response
from storage.repo.annotations import (
    create_study,
    get_or_create_annotator,
    upsert_human_annotation,
    upsert_study_task,
)
from study.judge_robustness.calibration import calibrate_rows
from study.judge_robustness.human_table import calibration_table, covered_studies
from tests.annotation.seed import seed, seed_disposition

_next_annotation = [5000]


def _task(
    session: Session, study_id: int, key: str, payload: dict[str, Any], votes: Sequence[dict]
) -> None:
    """One task and its kept annotations (30 s each), as ``annotate pull`` stores them."""
    task = upsert_study_task(study_id, key, payload=payload, session=session)
    assert task.id is not None
    for user, answers in enumerate(votes, start=1):
        annotator = get_or_create_annotator(user, email=f"u{user}@example.org", session=session)
        _next_annotation[0] += 1
        result = [
            {"from_name": k, "to_name": "x", "type": "choices", "value": {"choices": [v]}}
            for k, v in answers.items()
        ]
        upsert_human_annotation(
            ls_annotation_id=_next_annotation[0],
            study_task_id=task.id,
            annotator_id=annotator.id,
            result=result,
            lead_time=30.0,
            session=session,
        )


def _study(session: Session, name: str) -> int:
    study = create_study(name, ls_project_id=abs(hash(name)) % 10**6, session=session)
    assert study.id is not None
    return study.id


def _check_against_oracles(rows: pd.DataFrame, levels: Sequence[str], ordinal: bool) -> None:
    """The calibration statistics of the table equal sklearn's and krippendorff's."""
    got = calibrate_rows(
        list(rows["item"]),
        list(rows["judge"]),
        list(rows["human"]),
        levels=levels,
        ordinal=ordinal,
        bootstrap=50,
        seed=0,
    ).result
    labels = list(levels)
    assert got.kappa == pytest.approx(
        cohen_kappa_score(rows["human"], rows["judge"], labels=labels)
    )
    if ordinal:
        assert got.weighted_kappa == pytest.approx(
            cohen_kappa_score(rows["human"], rows["judge"], labels=labels, weights="quadratic")
        )
        index = {v: i for i, v in enumerate(labels)}
        data = np.array([[index[v] for v in rows["judge"]], [index[v] for v in rows["human"]]])
        assert got.alpha == pytest.approx(
            krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
        )


def test_every_judged_study_kind_registers_a_pairing() -> None:
    assert set(covered_studies()) == {
        "disposition_check",
        "test_awareness",
        "conflict_rubric",
        "helpfulness",
        "acknowledgement",
        "label_check",
    }


def demo_helpfulness(session: Session) -> tuple[int, list[tuple[int, str]]]:
    """The seeded run "demo" with a helpfulness study: its id and (response id, task key)."""
    seed(session)
    run = session.exec(select(GenerationRun).where(GenerationRun.name == "demo")).one()
    qids = {q.id: q.external_id for q in session.exec(select(Question))}
    out = []
    for resp in session.exec(select(Response).where(Response.run_id == run.id)):
        assert resp.id is not None
        key = response_key(run.name, qids[resp.question_id], resp.condition, resp.sample)
        out.append((resp.id, key))
    return _study(session, "helpfulness"), out


def test_helpfulness_pairs_the_judge_score_with_the_majority(session: Session) -> None:
    study_id, responses = demo_helpfulness(session)
    # judge, then three raters; the fourth response has no majority (4 / 3 / 2)
    plan = [(4, ["4", "4", "3"]), (1, ["2", "2", "1"]), (0, ["0", "0", "0"]), (3, ["4", "3", "2"])]
    for (rid, key), (judge, votes) in zip(responses, plan, strict=True):
        score = JudgeScore(
            response_id=rid, judge_model="sim/judge-a", kind="helpfulness", value=judge
        )
        # a second judge is never pooled with the first
        other = JudgeScore(response_id=rid, judge_model="sim/judge-b", kind="helpfulness")
        other.value = 0
        session.add_all([score, other])
        _task(session, study_id, key, {"run": "demo"}, [{"score": v} for v in votes])
    session.flush()
    got = calibration_table("helpfulness", session=session)
    assert got.judge == "sim/judge-a" and got.ordinal and got.levels == ("0", "1", "2", "3", "4")
    assert sorted(zip(got.table["judge"], got.table["human"], strict=True)) == [
        ("0", "0"), ("1", "2"), ("4", "4"),
    ]  # fmt: skip
    assert (got.no_majority, got.no_judge_label) == (1, 0)
    _check_against_oracles(got.table, got.levels, ordinal=True)


def test_conflict_rubric_pairs_each_dimension(session: Session) -> None:
    seed(session, conflicts=True)
    resp = session.exec(select(Response).where(Response.condition_class == "bank")).one()
    bank = session.exec(select(ConflictBank)).one()
    q = session.get(Question, bank.question_id)
    assert resp.id is not None and q is not None
    judge = {"d1": 3, "d2": 2, "d3": 4, "d4": 0, "d5": 1}
    for d, v in judge.items():
        session.add(
            JudgeScore(
                response_id=resp.id, judge_model="sim/judge-lenient", kind=f"conflict_{d}", value=v
            )
        )
    # D5 unparsed: stored with no value, not a score of 0
    session.exec(select(JudgeScore).where(JudgeScore.kind == "conflict_d5")).one().value = None
    key = response_key("conflicts-seed", q.external_id, resp.condition, resp.sample)
    a = {"d1": "3", "d2": "3", "d3": "2", "d4": "1", "d5": "1"}
    b = {"d1": "3", "d2": "3", "d3": "2", "d4": "0", "d5": "1"}  # D4 split: no majority
    _task(session, _study(session, "conflict_rubric"), key, {"run": "conflicts-seed"}, [a, b])
    session.flush()
    got = calibration_table("conflict_rubric", session=session)
    rows = {r.item.rsplit(":", 1)[1]: (r.judge, r.human) for r in got.table.itertuples()}
    assert rows == {"d1": ("3", "3"), "d2": ("2", "3"), "d3": ("4", "2")}
    assert (got.no_majority, got.no_judge_label, got.ordinal) == (1, 1, True)
    assert got.judge == "sim/judge-lenient"
    _check_against_oracles(got.table, got.levels, ordinal=True)


def test_test_awareness_pairs_the_judge_rating(session: Session) -> None:
    from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
    from study.disposition.human.kinds import disposition_key

    seed_disposition(session)
    rows = session.exec(
        select(DispositionArm.name, DispositionResponse).where(
            DispositionArm.id == DispositionResponse.arm_id, DispositionResponse.status == "ok"
        )
    ).all()
    study_id = _study(session, "test_awareness")
    judge = [1, 2, 5, 7, 3, 1]
    human = [("1", "1"), ("2", "3"), ("6", "6"), ("7", "7"), ("3", "3"), ("2", "2")]
    for (arm, resp), j, h in zip(rows, judge, human, strict=False):
        assert resp.id is not None
        session.add(
            DispositionScore(
                response_id=resp.id, judge_model="sim/aware", kind="awareness", value=float(j)
            )
        )
        payload = {
            "study": "dcheck", "arm": arm, "battery": resp.battery, "stem": resp.stem,
            "paraphrase": resp.paraphrase, "sample": resp.sample,
        }  # fmt: skip
        key = disposition_key("dcheck", arm, resp.battery, resp.stem, resp.paraphrase, resp.sample)
        _task(session, study_id, key, payload, [{"awareness": v} for v in h])
    session.flush()
    got = calibration_table("test_awareness", session=session)
    assert got.judge == "sim/aware" and got.ordinal and got.levels == tuple("1234567")
    assert list(zip(got.table["judge"], got.table["human"], strict=True)) == [
        ("1", "1"), ("5", "6"), ("7", "7"), ("3", "3"), ("1", "2"),
    ]  # fmt: skip
    assert got.no_majority == 1
    _check_against_oracles(got.table, got.levels, ordinal=True)


def test_label_check_pairs_the_assigned_leaf_with_the_humans_leaf(session: Session) -> None:
    study_id = _study(session, "label_check")
    yes = {"agree": "yes"}
    other = {"agree": "no", "better_leaf": "Self-direction"}
    no = {"agree": "no"}
    unsure = {"agree": "unsure"}
    leaf = {"labeler": "llm-a", "assigned_leaf": "Security and stability"}
    _task(session, study_id, "s1", leaf, [yes, yes, other])  # fits
    _task(session, study_id, "s2", leaf, [other, other, yes])  # a better leaf, agreed
    _task(session, study_id, "s3", leaf, [no, no, yes])  # no, but no agreed better leaf
    _task(session, study_id, "s4", leaf, [unsure, unsure, yes])  # unsure: not a label
    # another labeler's step is not pooled into llm-a's table
    _task(session, study_id, "s5", {**leaf, "labeler": "llm-b"}, [other, other, other])
    session.flush()
    got = calibration_table("label_check", session=session)
    pairs = zip(got.table["judge"], got.table["human"], strict=True)
    assert dict(zip(got.table["item"], pairs, strict=True)) == {
        "s1": ("Security and stability", "Security and stability"),
        "s2": ("Security and stability", "Self-direction"),
    }
    assert got.no_majority == 2 and not got.ordinal and "Self-direction" in got.levels
    assert got.judge == "llm-a"
    _check_against_oracles(got.table, got.levels, ordinal=False)


def test_a_study_without_a_judge_and_an_empty_table_are_one_sentence(
    session: Session, cli: Callable[..., Result], tmp_path: Any
) -> None:
    res = cli("judges", "calibration-table", "claim_check", "--out", str(tmp_path / "t.csv"))
    assert isinstance(res.exception, DriftLensError)
    assert "'claim_check' has no judge verdict" in str(res.exception)
    assert not (tmp_path / "t.csv").exists()
    _study(session, "helpfulness")
    session.flush()
    with pytest.raises(InputError, match="no item with both a human majority"):
        calibration_table("helpfulness", session=session)
