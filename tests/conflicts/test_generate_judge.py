"""Generation through the shared request path, and the judge contract on simulated replies."""

from __future__ import annotations

from collections import Counter

from sqlmodel import Session

from llm.sim.backend import SimBackend
from llm.sim.registry import get_preset
from llm.specs import ModelSpec
from storage.repo.judges import judge_scores_for
from storage.repo.runs import list_responses, require_run
from study.conflicts.items import import_bank_file, stored_instances
from study.conflicts.plan import ConflictGenerationOptions, build_plan, generate_conflicts
from study.conflicts.score import judge_conflict_run
from tests.counting_backend import CountingBackend


def test_rerun_sends_nothing_and_renders_identical_prompts(session: Session) -> None:
    import_bank_file(None, session=session)
    from study.conflicts.simulation import register_instances

    register_instances(inst for _, inst in stored_instances(session=session))
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-balanced"), run="c1", doses=(0, 6), samples=1
    )
    backend = CountingBackend(SimBackend("mc-balanced"))
    first = generate_conflicts(opts, session=session, backend=backend)
    assert first.requested == 84 and first.failed == 0 and backend.sent == 84
    again = generate_conflicts(opts, session=session, backend=backend)
    assert again.requested == 0 and backend.sent == 84
    run = require_run("c1", session=session)
    assert run.id is not None
    stored = {
        (r.question_id, r.condition): r.request["context"]["prompt_hash"]
        for r in list_responses(run.id, session=session)
    }
    seed = int(run.config["run_seed"])
    plan = build_plan(stored_instances(session=session), doses=(0, 6), samples=1, run_seed=seed)
    from study.conflicts.plan import prompt_hash

    assert {(p.question_id, p.condition): prompt_hash(p.rendered) for p in plan} == stored
    texts = [r.text or "" for r in list_responses(run.id, session=session)]
    assert all(t.strip() for t in texts)


def test_thousand_judge_replies_with_ten_percent_malformed(session: Session) -> None:
    import_bank_file(None, session=session)
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-committal"),
        run="c2",
        doses=(0, 2, 4, 6),
        samples=6,
        track="pipeline",
    )
    summary = generate_conflicts(opts, session=session)
    assert summary.planned == 42 * 4 * 6 == 1008
    assert set(summary.observability) <= {"FULL", "PARTIAL", "None"}
    assert summary.observability.get("None", 0) > 0
    judge = SimBackend(get_preset("judge-strict").model_copy(update={"malformed_rate": 0.1}))
    res = judge_conflict_run(
        "c2", ModelSpec.parse("sim/judge-strict"), session=session, backend=judge
    )
    assert res.requested == 1008 and res.failed == 0
    assert res.ok + res.repaired + res.errors == 1008
    assert 60 <= res.repaired + res.errors <= 150  # ~10 % broke the format first time
    assert res.errors > 0 and res.repaired > res.errors
    run = require_run("c2", session=session)
    assert run.id is not None
    responses = list_responses(run.id, session=session)
    by_id = {r.id: r for r in responses if r.id is not None}
    scores = judge_scores_for(list(by_id), judge_model="sim/judge-strict", session=session)
    status_by_response = {s.response_id: s.parse_status for s in scores}
    assert Counter(status_by_response.values()) == Counter(
        {"ok": res.ok, "repaired": res.repaired, "error": res.errors}
    )
    high = {r.id for r in responses if r.request["context"]["instance_id"] in _high_risk(session)}
    d6 = {s.response_id for s in scores if s.kind == "conflict_d6"}
    assert d6 == high  # D6 present iff high-risk
    for s in scores:
        if s.value is not None and s.kind != "conflict_d6":
            assert 0 <= s.value <= 4 and s.value == int(s.value)
        if s.parse_status == "error":
            assert s.value is None
    for s in scores:
        obs = by_id[s.response_id].request["context"]["observability"]
        if s.kind in ("conflict_d1", "conflict_d2") and obs == "None":
            assert s.value is None
        if s.kind == "conflict_d1" and obs != "None" and s.parse_status != "error":
            assert s.value is not None


def _high_risk(session: Session) -> set[str]:
    return {i.instance_id for _, i in stored_instances(session=session) if i.high_risk}


def test_served_simulator_answers_bank_requests_like_in_process(session: Session) -> None:
    """Over HTTP (real openai client, simulator process) the answers equal the in-process ones."""
    import os
    import secrets

    from llm.backends import get_backend
    from study.sim_endpoint import SimProcess

    import_bank_file(None, session=session)
    key = secrets.token_urlsafe(12)
    spec = "openai-api/simulator/sim/mc-balanced"
    with SimProcess(api_key=key) as url:
        env = {**os.environ, "SIMULATOR_BASE_URL": url, "SIMULATOR_API_KEY": key}
        served = generate_conflicts(
            ConflictGenerationOptions(model=ModelSpec.parse(spec), run="http", doses=(6,), seed=5),
            session=session,
            backend=get_backend(ModelSpec.parse(spec), env=env),
        )
    assert served.requested == 42 and served.failed == 0
    local = generate_conflicts(
        ConflictGenerationOptions(
            model=ModelSpec.parse("sim/mc-balanced"), run="local", doses=(6,), seed=5
        ),
        session=session,
    )
    assert local.requested == 42

    def texts(name: str) -> list[str]:
        run = require_run(name, session=session)
        assert run.id is not None
        return [r.text or "" for r in list_responses(run.id, session=session)]

    assert texts("http") == texts("local")
