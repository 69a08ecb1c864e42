"""The triage queue: judge-human and judge-judge disagreements ordered together by gap.

The order is checked against a plain pandas sort of the same rows; the study kinds' second
judges are read from annotations stored as a pull writes them (no Label Studio server).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlmodel import Session, col, select

from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
from storage.models import JudgeScore
from study.judge_robustness.human_table import study_pairs
from study.judge_robustness.triage import JUDGE_HUMAN, triage_queue
from tests.judge_robustness.test_calibration_hooks import _study, _task, demo_helpfulness


def _oracle(
    human: list[tuple[str, str, str]], judges: list[tuple[str, str, str, str]], ordinal: bool
) -> list[tuple[str, str, str]]:
    """(item, source, other) of every disagreement, sorted by pandas."""
    h = pd.DataFrame(human, columns=["item", "judge", "other_label"]).assign(
        source="judge-human", other="annotators' majority", rank=0
    )
    j = pd.DataFrame(judges, columns=["item", "judge", "other", "other_label"]).assign(
        source="judge-judge", rank=1
    )
    df = pd.concat([h, j], ignore_index=True)
    df["pos"] = range(len(df))
    if ordinal:
        df["gap"] = (df["judge"].astype(float) - df["other_label"].astype(float)).abs()
    else:
        df["gap"] = (df["judge"] != df["other_label"]).astype(float)
    df = df[df["gap"] > 0].sort_values(["gap", "rank", "pos"], ascending=[False, True, True])
    return list(zip(df["item"], df["source"], df["other"], strict=True))


@pytest.mark.parametrize("ordinal", [True, False])
@pytest.mark.parametrize("rng_seed", [0, 1, 2])
def test_the_queue_is_the_pandas_sort_by_gap(ordinal: bool, rng_seed: int) -> None:
    rng = np.random.default_rng(rng_seed)
    levels = [str(v) for v in range(5)] if ordinal else ["yes", "no", "unsure"]
    pick = lambda: str(rng.choice(levels))  # noqa: E731
    human = [(f"i{k}", pick(), pick()) for k in range(40)]
    judges = [(f"i{k}", pick(), f"judge-{k % 2}", pick()) for k in range(0, 60, 1)]
    got = triage_queue(human, judges, judge="j", ordinal=ordinal)
    assert [(e.item, e.source, e.other) for e in got] == _oracle(human, judges, ordinal)
    assert len(got) > 0 and all(e.gap > 0 for e in got)
    # ties: a judge-human entry comes before a judge-judge one of the same gap
    assert any(e.source == JUDGE_HUMAN for e in got) and got[-1].source == "judge-judge"


def test_a_second_judge_gives_pairs_with_or_without_a_majority(session: Session) -> None:
    study_id, responses = demo_helpfulness(session)
    # judge a, judge b (None: b did not score it), the raters; the last has no majority
    plan = [(4, 4, ["4", "4", "3"]), (1, 3, ["1", "1", "1"]), (0, None, ["2", "2", "2"])]
    plan.append((3, 0, ["4", "3", "2"]))
    keys = [key for _rid, key in responses]
    for (rid, key), (a, b, votes) in zip(responses, plan, strict=True):
        scores = {"sim/a": a} if b is None else {"sim/a": a, "sim/b": b}
        for judge, v in scores.items():
            session.add(JudgeScore(response_id=rid, judge_model=judge, kind="helpfulness", value=v))
        _task(session, study_id, key, {"run": "demo"}, [{"score": v} for v in votes])
    # a third judge whose score is unparsed gives no pair
    bad = JudgeScore(
        response_id=responses[0][0], judge_model="sim/c", kind="helpfulness", parse_status="error"
    )
    session.add(bad)
    session.flush()
    got = study_pairs("helpfulness", session=session)
    assert got.judge == "sim/a"
    assert sorted(got.judge_pairs) == sorted(
        [(keys[0], "4", "sim/b", "4"), (keys[1], "1", "sim/b", "3"), (keys[3], "3", "sim/b", "0")]
    )
    queue = triage_queue(got.rows, got.judge_pairs, judge=got.judge, ordinal=True)
    # the judges' gap of 3 on the item without a majority first, then gap 2 (both kinds)
    assert [(e.item, e.source, e.gap) for e in queue] == [
        (keys[3], "judge-judge", 3.0),
        (keys[2], "judge-human", 2.0),
        (keys[1], "judge-judge", 2.0),
    ]
    assert queue[0].note() == "sim/a 3 vs sim/b 0 (gap 3)"


def _seeded_answers(session: Session, n: int) -> list[tuple[str, DispositionResponse]]:
    """The seeded disposition study's first ``n`` answered responses, with their arm."""
    from tests.annotation.seed import seed_disposition

    seed_disposition(session)
    rows = session.exec(
        select(DispositionArm.name, DispositionResponse).where(
            DispositionArm.id == DispositionResponse.arm_id, DispositionResponse.status == "ok"
        )
    ).all()
    return [(str(arm), resp) for arm, resp in rows[:n]]


def _disposition_task(
    session: Session,
    study_id: int,
    arm: str,
    resp: DispositionResponse,
    extra: dict[str, Any],
    votes: list[dict[str, Any]],
) -> str:
    """Store a task of a disposition study on ``resp`` (payload as a push writes it); its key."""
    from study.disposition.human.kinds import disposition_key

    payload = {
        "study": "dcheck", "arm": arm, "battery": resp.battery, "stem": resp.stem,
        "paraphrase": resp.paraphrase, "sample": resp.sample, **extra,
    }  # fmt: skip
    key = disposition_key("dcheck", arm, resp.battery, resp.stem, resp.paraphrase, resp.sample)
    _task(session, study_id, key, payload, votes)
    return key


def test_a_second_test_awareness_judge_gives_pairs(session: Session) -> None:
    rows = _seeded_answers(session, 3)
    study_id = _study(session, "test_awareness")
    keys = []
    for (arm, resp), (a, b) in zip(rows, [(1, 1), (2, 6), (5, 4)], strict=True):
        assert resp.id is not None
        for judge, v in (("sim/aware", a), ("sim/aware-2", b)):
            session.add(
                DispositionScore(response_id=resp.id, judge_model=judge, kind="awareness", value=v)
            )
        keys.append(_disposition_task(session, study_id, arm, resp, {}, [{"awareness": "1"}] * 2))
    session.flush()
    got = study_pairs("test_awareness", session=session)
    assert got.judge == "sim/aware"
    assert got.judge_pairs == (
        (keys[0], "1", "sim/aware-2", "1"),
        (keys[1], "2", "sim/aware-2", "6"),
        (keys[2], "5", "sim/aware-2", "4"),
    )


def test_a_second_classifier_gives_pairs_on_the_other_classifiers_items(session: Session) -> None:
    rows = _seeded_answers(session, 2)
    study_id = _study(session, "disposition_check")
    keys = []
    # each task names the classifier it checks; the other one classified the answer too
    for (arm, resp), (own, a, b) in zip(
        rows, [("sim/cls-a", "aligned", "misaligned"), ("sim/cls-b", "aligned", "aligned")],
        strict=True,
    ):  # fmt: skip
        assert resp.id is not None
        for judge, label in (("sim/cls-a", a), ("sim/cls-b", b)):
            session.add(
                DispositionScore(
                    response_id=resp.id, judge_model=judge, kind="category", label=label
                )
            )
        extra = {"judge": own, "categories": ["aligned", "misaligned"]}
        keys.append(
            _disposition_task(session, study_id, arm, resp, extra, [{"category": "aligned"}] * 2)
        )
    session.flush()
    got = study_pairs("disposition_check", session=session)
    assert got.judge == "sim/cls-a, sim/cls-b"
    # item 1 is cls-a's (cls-b gave misaligned), item 2 cls-b's (cls-a agreed); the seed's
    # own classifier scored both answers too
    seeded = [p for p in got.judge_pairs if p[2] == "sim/classifier"]
    assert [p[0] for p in seeded] == keys
    assert tuple(p for p in got.judge_pairs if p[2] != "sim/classifier") == (
        (keys[0], "aligned", "sim/cls-b", "misaligned"),
        (keys[1], "aligned", "sim/cls-a", "aligned"),
    )
    assert [r[1:] for r in got.rows] == [("aligned", "aligned"), ("aligned", "aligned")]


def test_label_check_pairs_two_labelers_of_the_same_step(session: Session) -> None:
    """Two labelers' labels of one step are two tasks; their differing leaves are a pair."""
    from annotation.selection import parse_selection
    from annotation.tasks import build_tasks
    from storage.models import LabelerSpec, OntologyVersion, Response, StepLabel
    from tests.annotation.seed import seed

    seed(session)
    first = session.exec(select(Response).order_by(col(Response.id))).first()
    version = session.exec(select(OntologyVersion)).one()
    other = LabelerSpec(key="llm-b-test", name="llm-b", kind="llm")
    session.add(other)
    session.flush()
    assert first is not None and first.id is not None and other.id is not None
    assert version.id is not None
    # the seed's keywords labeler says "Security and stability" on steps 0 and 1
    for step, leaf in ((0, "Self-direction"), (1, "Security and stability")):
        session.add(
            StepLabel(
                response_id=first.id,
                step_index=step,
                labeler_id=other.id,
                ontology_version_id=version.id,
                category="Protective",
                symbol=leaf,
            )
        )
    session.flush()
    specs = build_tasks("label_check", parse_selection([]), session=session)
    assert len(specs) == 4
    study_id = _study(session, "label_check")
    yes = {"agree": "yes"}
    for spec in specs:
        _task(session, study_id, spec.key, spec.data, [yes, yes, yes])
    session.flush()
    pairs = study_pairs("label_check", session=session)
    judge = pairs.judge
    differing = [p for p in pairs.judge_pairs if p[1] != p[3]]
    assert len(pairs.judge_pairs) == 2  # both steps have a second labeler
    ((item, mine, name, theirs),) = differing
    assert (mine, theirs) == ("Security and stability", "Self-direction")
    assert name != judge and ":0:" in item  # step 0, the one they disagree on
    queue = triage_queue(pairs.rows, pairs.judge_pairs, judge=judge, ordinal=False)
    assert [(e.item, e.source) for e in queue] == [(item, "judge-judge")]
