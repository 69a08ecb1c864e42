"""The disposition simulator served over HTTP, through the real ``openai`` client."""

from __future__ import annotations

import os
import secrets

from sqlmodel import Session, select

from llm.specs import ModelSpec
from storage.disposition_models import DispositionResponse, DispositionScore
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.runs import ArmSpec, add_arms, run_study
from study.disposition.sim.responder import DispositionSimBackend
from study.disposition.sim_endpoint import probe_registry
from study.sim_endpoint import SimProcess


def _tiny() -> BatteryDocument:
    doc = load_sample_batteries()
    return BatteryDocument(
        batteries=[b.model_copy(update={"stems": b.stems[:2]}) for b in doc.batteries[:1]]
    )


def test_served_arms_answer_like_the_in_process_ones(session: Session) -> None:
    doc = _tiny()
    key = secrets.token_urlsafe(12)
    arms = [
        ArmSpec(
            "ref",
            ModelSpec.parse("openai-api/dsim/disp-qwen-d000"),
            role="reference",
            dose=0,
            max_tokens=300,
        ),
        ArmSpec(
            "off", ModelSpec.parse("openai-api/dsim/disp-qwen-d100"), dose=100, reasoning="off"
        ),
        ArmSpec(
            "budget",
            ModelSpec.parse("openai-api/dsim/disp-qwen-d100"),
            dose=100,
            reasoning="budget:32",
        ),
    ]
    add_arms("served", arms, session=session)
    with SimProcess(api_key=key, module="study.disposition.sim_endpoint") as url:
        env = {**os.environ, "DSIM_BASE_URL": url, "DSIM_API_KEY": key}
        gens, scores = run_study(
            "served",
            doc,
            session=session,
            judge=ModelSpec.parse("openai-api/dsim/default"),
            env=env,
        )
    assert [g.errors for g in gens] == [0, 0, 0]
    assert scores.errors == 0 and scores.failed_requests == 0 and scores.scored > 0
    rows = session.exec(select(DispositionResponse)).all()
    assert len(rows) == 3 * 24
    assert all(r.answer for r in rows if r.status == "ok")
    assert {r.route for r in rows} == {"single", "template", "two-phase"}
    # the same request answered in-process gives the same text (one simulator, two routes)
    backend = DispositionSimBackend("disp-qwen-d100", probe_registry(doc))
    off = [r for r in rows if r.route == "template"][:5]
    from storage.repo.disposition import get_arm
    from study.disposition.generate import arm_sampling
    from study.disposition.plan import PlanItem, Reasoning, first_request

    arm = get_arm("served", "off", session=session)
    assert arm is not None
    probes = {(p.battery, p.stem, p.paraphrase): p for p in doc.probes()}
    from study.disposition.plan import item_seed

    for r in off:
        probe = probes[(r.battery, r.stem, r.paraphrase)]
        item = PlanItem(probe, r.sample, item_seed(probe, r.sample))
        req = first_request(item, Reasoning("off"), arm_sampling(arm), 0)
        assert backend.answer(req).text == r.text
    n_scores = len(session.exec(select(DispositionScore)).all())
    assert n_scores >= scores.scored
