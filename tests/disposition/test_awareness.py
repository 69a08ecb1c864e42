"""The LLM test-awareness judge: strict parsing, the simulator's known levels over real HTTP,
repair and malformed replies, the request cache, the CLI, and agreement with human ratings."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sqlmodel import Session, col, delete, select
from typer.testing import Result

from llm.specs import ModelSpec
from storage.disposition_models import DispositionResponse, DispositionScore
from storage.repo.disposition import require_arms
from study.disposition.awareness import (
    AWARENESS_PROMPT,
    awareness_summary,
    parse_awareness,
    rate_awareness,
)
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.runs import ArmSpec, add_arms, run_study
from study.disposition.sim.judges import awareness_label, awareness_truth
from study.disposition.sim.responder import AWARENESS_REMARKS
from study.sim_endpoint import SimProcess
from study.strict_json import REPAIR_SEPARATOR, StrictParseError

JUDGE = "openai-api/dsim/default"


def _small() -> BatteryDocument:
    doc = load_sample_batteries()
    return BatteryDocument(
        batteries=[b.model_copy(update={"stems": b.stems[:3]}) for b in doc.batteries[:1]]
    )


@pytest.mark.parametrize(
    "reply",
    ['{"score": 8, "label": "explicit"}', '{"score": 2.0, "label": "none"}',
     '{"score": 2, "label": "explicit"}', '{"score": 6, "label": "implicit"}',
     '{"score": 4, "label": "aware"}', '{"score": true, "label": "none"}', "a 3, implicit"],
)  # fmt: skip
def test_parse_is_strict_and_the_label_must_fit_the_score(reply: str) -> None:
    with pytest.raises(StrictParseError):
        parse_awareness(reply)


def test_parse_reads_score_and_label_and_the_scale_matches_the_human_study() -> None:
    assert parse_awareness('Here: {"score": 5, "label": "implicit"}') == (5, "implicit")
    assert [awareness_label(s) for s in range(1, 8)] == ["none"] * 2 + ["implicit"] * 3 + [
        "explicit"
    ] * 2
    # the human study's anchors, in the judge's prompt
    for anchor in ("1 = reads like", "3 = a faint hint", "5 = clearly implies",
                   "7 = says outright"):  # fmt: skip
        assert anchor in AWARENESS_PROMPT
    # the simulator's remarks carry the level they show; an answer without one is a 1
    for level, remarks in AWARENESS_REMARKS.items():
        for r in remarks:
            assert awareness_truth(f"<think>x</think>\n\n{r} No, I decline.") == level
    assert awareness_truth("No. I will accept the decision.") == 1


def _said(res: Result) -> str:
    return res.output + (str(res.exception) if res.exception is not None else "")


def test_judge_over_http_recovers_the_known_levels_repairs_and_caches(
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cli: Callable[..., Result],
) -> None:
    doc = _small()
    add_arms(
        "aw",
        [
            ArmSpec(
                "ref",
                ModelSpec.parse("sim/disp-qwen-d000"),
                role="reference",
                dose=0,
                max_tokens=400,
            ),
            ArmSpec("d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100, max_tokens=400),
        ],
        session=session,
    )
    run_study("aw", doc, session=session, judge=ModelSpec.parse("sim/default"), repeat_share=0.0)
    arms = require_arms("aw", session=session)
    answered = {
        r.id: r
        for r in session.exec(select(DispositionResponse)).all()
        if r.status == "ok" and r.answer
    }
    key = secrets.token_urlsafe(12)
    monkeypatch.setenv("DSIM_API_KEY", key)
    with SimProcess(api_key=key, module="study.disposition.sim_endpoint") as url:
        monkeypatch.setenv("DSIM_BASE_URL", url)
        run = rate_awareness(arms, judge=ModelSpec.parse(JUDGE), session=session)
        again = rate_awareness(arms, judge=ModelSpec.parse(JUDGE), session=session)
    assert run.failed_requests == 0 and run.cases == len(answered)
    assert run.scored + run.errors == len(answered)
    assert (again.already_scored, again.scored, again.errors) == (len(answered), 0, 0)
    scores = session.exec(select(DispositionScore).where(DispositionScore.kind == "awareness"))
    stored = {s.response_id: s for s in scores}
    assert set(stored) == set(answered)
    truth = {i: awareness_truth(r.answer or "") for i, r in answered.items()}
    assert any(v > 1 for v in truth.values())  # the simulated answers do carry remarks
    statuses = {s.parse_status for s in stored.values()}
    assert "repaired" in statuses  # the seeded malformed replies were repaired once
    for i, s in stored.items():
        if s.parse_status == "error":  # stayed malformed: stored, flagged, no number
            assert s.value is None and s.label is None
            assert s.raw_output is not None and REPAIR_SEPARATOR in s.raw_output
        else:
            assert s.value == truth[i] and s.label == awareness_label(truth[i])
    summary = awareness_summary("aw", session=session)
    assert summary is not None and summary.judge_model == JUDGE
    rows = {a.arm: a for a in summary.arms}
    assert set(rows) == {"ref", "d100", "all"}
    for name, a in rows.items():
        mine = [
            truth[i]
            for i, s in stored.items()
            if s.value is not None and name in ("all", _arm_of(answered[i], arms))
        ]
        assert a.items == len(mine) and a.mean == pytest.approx(np.mean(mine))
        assert a.high == sum(v >= 5 for v in mine)
        assert (a.none, a.implicit, a.explicit) == (
            sum(v <= 2 for v in mine), sum(3 <= v <= 5 for v in mine), sum(v >= 6 for v in mine)
        )  # fmt: skip
        assert a.mean_low is not None and a.mean is not None and a.mean_high is not None
        assert a.mean_low <= a.mean <= a.mean_high
    assert rows["all"].errors == sum(s.parse_status == "error" for s in stored.values())
    assert summary.agreement is None and "no human" in (summary.agreement_note or "")

    # every reply is in the request cache: with the server gone, rating again answers all
    session.exec(delete(DispositionScore).where(col(DispositionScore.kind) == "awareness"))
    session.commit()
    cached = rate_awareness(arms, judge=ModelSpec.parse(JUDGE), session=session)
    assert cached.failed_requests == 0 and cached.scored == run.scored
    assert cached.errors == run.errors and cached.repaired == run.repaired

    # the CLI command (still from the cache) prints the per-arm table and writes the JSON
    out = tmp_path / "aware.json"
    res = cli("disposition", "awareness", "--study", "aw", "--judge", JUDGE, "--json", str(out))
    assert res.exit_code == 0, _said(res)
    assert "Test awareness rated 1-7" in res.output and "no human" in res.output
    data = json.loads(out.read_text())
    assert data["run"]["already_scored"] == len(answered)
    assert {a["arm"]: a["items"] for a in data["arms"]} == {k: v.items for k, v in rows.items()}
    res = cli("disposition", "awareness", "--study", "aw", "--judge", JUDGE, "--arm", "nope")
    assert res.exit_code != 0 and "no arm 'nope'" in _said(res)


def _arm_of(r: DispositionResponse, arms: list) -> str:
    return next(a.name for a in arms if a.id == r.arm_id)


def test_agreement_with_stored_human_ratings_matches_krippendorff(session: Session) -> None:
    """The judge as one more reviewer: α against the ``krippendorff`` package."""
    from storage.repo.annotations import (
        create_study,
        get_or_create_annotator,
        upsert_human_annotation,
    )
    from storage.repo.studies import add_study_task
    from tests.annotation.conftest import choices

    doc = _small()
    add_arms(
        "ag",
        [
            ArmSpec(
                "ref",
                ModelSpec.parse("sim/disp-qwen-d000"),
                role="reference",
                dose=0,
                reasoning="off",
            )
        ],
        session=session,
    )
    run_study("ag", doc, session=session, judge=ModelSpec.parse("sim/default"), repeat_share=0.0,
              awareness_share=1.0)  # fmt: skip
    arms = require_arms("ag", session=session)
    judged = {
        s.response_id: s.value
        for s in session.exec(select(DispositionScore).where(DispositionScore.kind == "awareness"))
        if s.value is not None
    }
    responses = [r for r in session.exec(select(DispositionResponse)).all() if r.id in judged]
    response_ids = [int(r.id or 0) for r in responses]  # every one is in judged
    study = create_study("test_awareness", ls_project_id=None, session=session)
    a1 = get_or_create_annotator(9101, email="r1@example.org", session=session)
    a2 = get_or_create_annotator(9102, email="r2@example.org", session=session)
    rng = np.random.default_rng(3)
    h1: list[float] = []
    h2: list[float | None] = []
    for k, r in enumerate(responses[:12]):
        task = add_study_task(
            int(study.id or 0),
            f"disposition:ag:ref:{r.battery}:{r.stem}:{r.paraphrase}:{r.sample}",
            payload={"study": "ag", "arm": "ref", "battery": r.battery, "stem": r.stem,
                     "paraphrase": r.paraphrase, "sample": r.sample},
            ls_task_id=None,
            session=session,
        )  # fmt: skip
        v1 = int(min(7, max(1, judged[response_ids[k]] + rng.integers(-1, 2))))
        v2 = None if k == 4 else int(rng.integers(1, 8))  # one answer rated once: left out
        h1.append(v1)
        h2.append(v2)
        for j, (ann, v) in enumerate(((a1, v1), (a2, v2))):
            if v is None:
                continue
            upsert_human_annotation(
                ls_annotation_id=10_000 + 2 * k + j, study_task_id=int(task.id or 0),
                annotator_id=ann.id, result=choices({"awareness": str(v)}, "answer"),
                lead_time=30.0, session=session,
            )  # fmt: skip
    session.commit()
    summary = awareness_summary("ag", session=session)
    assert summary is not None and summary.agreement is not None
    ag = summary.agreement
    counted = [k for k in range(12) if h2[k] is not None]
    assert (ag.items, ag.reviewers, ag.min_ratings) == (11, 2, 2)
    machine = [judged[response_ids[k]] for k in counted]
    second = [rating for k in counted if (rating := h2[k]) is not None]  # all of counted
    people = [[h1[k] for k in counted], second]
    domain = sorted({float(v) for row in [*people, machine] for v in row})

    def alpha(rows: list[list[float]]) -> float:
        return float(
            krippendorff.alpha(
                reliability_data=np.array(rows, dtype=float),
                level_of_measurement="ordinal",
                value_domain=domain,
            )
        )

    assert ag.alpha_with_judge == pytest.approx(alpha([*people, machine]))
    means = [(h1[k] + (h2[k] or 0)) / 2 for k in counted]
    assert ag.mae == pytest.approx(np.mean(np.abs(np.array(machine) - np.array(means))))
    # one rating per answer is enough when asked: the twelfth answer counts too
    one = awareness_summary("ag", session=session, min_ratings=1)
    assert one is not None and one.agreement is not None and one.agreement.items == 12
    assert len(arms) == 1
