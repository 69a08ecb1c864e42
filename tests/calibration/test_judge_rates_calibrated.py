"""The response judge's helpfulness / distraction / acknowledgement calibrated to people."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from sqlmodel import Session

from annotation.tasks import response_key
from llm.specs import ModelSpec
from storage.models import Question
from storage.repo.studies import select_responses
from study.catalog.store import ensure_default_catalog
from study.reasoning.calibrated_judges import calibrated_judge_rates, calibrated_lines
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.judges import judge_run

RUN = "cal-judged"


def _judged(session: Session) -> dict[str, int]:
    """A judged run of 25 questions; the response id per response key."""
    ensure_default_catalog(session=session)
    for i in range(25):
        session.add(Question(external_id=f"cq-{i}", text=f"Should one choose option {i} or "
                             "the other? Weigh the trade-offs."))  # fmt: skip
    session.commit()
    run_generation(
        GenerationOptions(
            model=ModelSpec.parse("sim/default"), run=RUN, perturbations="whitespace,age", samples=2
        ),
        session=session,
    )
    judge_run(RUN, ModelSpec.parse("sim/default"), session=session)
    session.commit()
    return {
        response_key(run.name, q.external_id, r.condition, r.sample): int(r.id or 0)
        for r, run, _m, q, _p in select_responses(session=session, run=RUN)
    }


def _helpfulness(session: Session, ids: dict[str, int]) -> dict[str, float]:
    from storage.repo.judges import judge_scores_for

    by_id = {
        s.response_id: float(s.value)
        for s in judge_scores_for(list(ids.values()), kind="helpfulness",
                                  judge_model="sim/default", session=session)
        if s.value is not None
    }  # fmt: skip
    return {k: by_id[i] for k, i in ids.items() if i in by_id}


def test_people_one_point_below_the_judge_move_the_headline(session: Session, cli) -> None:
    ids = _judged(session)
    # the judge command names the headline of each criterion (no study pulled here)
    out = cli("judge", "--run", RUN, "--model", "sim/default")
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "helpfulness: headline model-only (0 human labels of" in text
    assert "no helpfulness study pulled" in text
    data = json.loads(cli("judge", "--run", RUN, "--model", "sim/default", "--json").output)
    assert [r["what"] for r in data["calibrated"]] == [
        "helpfulness", "distraction", "acknowledgement"
    ]  # fmt: skip
    judge = _helpfulness(session, ids)
    keys = sorted(judge)
    # known dose: the people score every response one point below the judge (clipped)
    people = {k: max(0.0, judge[k] - 1.0) for k in keys}
    truth = float(np.mean(list(people.values())))
    rng = np.random.default_rng(0)
    slice_ = [keys[i] for i in rng.choice(len(keys), size=60, replace=False)]
    p = 60 / len(keys)
    humans = {"helpfulness": ({k: people[k] for k in slice_}, {k: p for k in slice_}, 0)}
    rates, notes = calibrated_judge_rates(RUN, "sim/default", session=session, humans=humans,
                                          bootstrap=200)  # fmt: skip
    by = {r.what: r for r in rates}
    h = by["helpfulness"]
    assert h.headline == "calibrated" and h.n_human == 60 and h.note is None
    assert h.calibrated_ci is not None
    assert h.calibrated_ci[0] <= truth <= h.calibrated_ci[1]
    assert h.model_only_ci[0] > truth  # the judge alone misses the people's mean
    # no human study of distraction or acknowledgement pulled here
    assert by["distraction"].headline == "model-only"
    assert "no distraction study pulled" in str(by["distraction"].note)
    assert "no acknowledgement study pulled" in str(by["acknowledgement"].note)
    lines = calibrated_lines(rates)
    assert lines[0].startswith("helpfulness: headline calibrated (60 human labels of ")
    assert notes == ()

    # bad input, one sentence each, the judge's headline kept
    few = {"helpfulness": ({k: people[k] for k in slice_[:8]}, {k: p for k in slice_[:8]}, 0)}
    r = calibrated_judge_rates(RUN, "sim/default", session=session, humans=few, bootstrap=50)
    assert r[0][0].headline == "model-only" and "fewer than the 20" in str(r[0][0].note)
    bare: dict[str, Any] = {"helpfulness": ({k: people[k] for k in slice_}, {}, 0)}
    r = calibrated_judge_rates(RUN, "sim/default", session=session, humans=bare, bootstrap=50)
    assert "no stored inclusion probabilities" in str(r[0][0].note)
    stray = {"helpfulness": ({**{k: people[k] for k in slice_}, "response:x:y:z:0": 2.0},
                             {k: p for k in slice_}, 4)}  # fmt: skip
    r = calibrated_judge_rates(RUN, "sim/default", session=session, humans=stray, bootstrap=50)
    assert r[0][0].headline == "calibrated"
    assert r[1] == (
        "4 helpfulness votes are off the judge's scale and left out",
        "1 helpfulness labels are on responses this judge never scored and are left out",
    )
