"""Judges end to end: which responses get which kinds, storage, resume, HTTP, repair, CLI."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable

import pytest
from sqlmodel import Session, select
from typer.testing import Result

from llm.seeds import stable_int
from llm.sim.registry import get_preset
from llm.sim.server import SimServer
from llm.specs import ModelSpec
from storage.errors import NotFoundError
from storage.models import JudgeScore, Question, Response
from study.catalog.store import ensure_default_catalog
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.judges import judge_run, run_cases
from study.reasoning.sim.tasks import judge_verdict
from study.strict_json import REPAIR_SEPARATOR
from tests.scripted_backend import ScriptedBackend

RUN = "judged"
QUESTIONS = (
    "Should someone take a stable job or start a business? Weigh the trade-offs.",
    "Is it better to rent or to buy a home? Compare the two.",
    "Should a city fund buses or roads? Explain the trade-offs.",
    "Is it fair to judge historical figures by today's standards? Justify it.",
)


def _make_run(session: Session, perturbations: str = "whitespace,bereavement,age") -> int:
    ensure_default_catalog(session=session)
    for i, text in enumerate(QUESTIONS):
        session.add(Question(external_id=f"jq-{i}", text=text))
    session.commit()
    s = run_generation(
        GenerationOptions(
            model=ModelSpec.parse("sim/default"), run=RUN, perturbations=perturbations, samples=2
        ),
        session=session,
    )
    assert s.failed == 0
    return s.planned


def _distinct_cases(session: Session) -> set[tuple[object, ...]]:
    return {
        (c.kinds, c.question, c.memory, c.steps, c.answer, None if c.steps else c.text)
        for c in run_cases(RUN, session=session)
    }


def _scores(session: Session, model: str) -> list[tuple[JudgeScore, Response]]:
    stmt = (
        select(JudgeScore, Response)
        .join(Response, Response.id == JudgeScore.response_id)  # type: ignore[arg-type]
        .where(JudgeScore.judge_model == model)
    )
    return list(session.exec(stmt).all())


def test_in_process_judge_kinds_values_and_resume(session: Session, sim_calls: list[str]) -> None:
    planned = _make_run(session)
    generated = len(sim_calls)
    s = judge_run(RUN, ModelSpec.parse("sim/default"), session=session)
    assert s.responses == planned and s.requested == planned and s.skipped == 0
    assert s.failed == 0 and s.repaired + s.errors >= 1
    judge_calls = len(sim_calls) - generated
    # One request per distinct case plus one repair per broken reply (identical cases,
    # e.g. two samples with the same text, are sent once).
    distinct = len(_distinct_cases(session))
    assert judge_calls <= distinct + s.repaired + s.errors
    assert judge_calls >= distinct

    rows = _scores(session, "sim/default")
    kinds_by_response: dict[int, set[str]] = {}
    for score, resp in rows:
        kinds_by_response.setdefault(resp.id or 0, set()).add(score.kind)
        assert score.raw_output
        if score.parse_status == "error":
            assert score.value is None and REPAIR_SEPARATOR in score.raw_output
        else:
            assert score.value is not None
    for _score, resp in rows:
        expected = (
            {"helpfulness"}
            if resp.condition == "baseline"
            else {"helpfulness", "distraction", "acknowledgement"}
        )
        assert kinds_by_response[resp.id or 0] == expected
    assert len(kinds_by_response) == planned
    assert Counter(sc.kind for sc, _ in rows)["helpfulness"] == planned

    # Distraction follows the simulator's rule: steps differ from the question's baseline.
    preset = get_preset("default")
    cases = {c.response_id: c for c in run_cases(RUN, session=session)}
    checked = 0
    for score, resp in rows:
        if score.kind != "distraction" or score.value is None:
            continue
        case = cases[resp.id or 0]
        payload = {
            "criteria": list(case.kinds),
            "memory": case.memory,
            "question": case.question,
            "steps": list(case.steps),
            "answer": case.answer,
        }
        if not case.steps:
            payload["text"] = case.text or ""
        key = json.dumps(payload, sort_keys=True)
        rng = random.Random(stable_int("task-judge", preset.seed, key, 0, 0))
        assert score.value == judge_verdict(payload, preset, rng)["distraction"]
        checked += 1
    assert checked > 20
    by_class = Counter(
        (resp.condition_class, sc.value) for sc, resp in rows if sc.kind == "distraction"
    )
    # Life events (dose ~0.6 per step) are judged distracted far more than noise.
    le = by_class[("life_event", 1.0)] / max(
        1, sum(v for k, v in by_class.items() if k[0] == "life_event")
    )
    no = by_class[("noise", 1.0)] / max(1, sum(v for k, v in by_class.items() if k[0] == "noise"))
    assert le > no + 0.3

    before = len(sim_calls)
    again = judge_run(RUN, ModelSpec.parse("sim/default"), session=session)
    assert (again.requested, again.skipped, again.scores_written) == (0, planned, 0)
    assert len(sim_calls) == before  # a re-run makes no new requests
    assert again.by_kind == s.by_kind


def test_judge_over_http_agrees_with_in_process(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = _make_run(session, perturbations="bereavement")
    local = judge_run(RUN, ModelSpec.parse("sim/default"), session=session)
    with SimServer(api_key="judge-key") as url:
        monkeypatch.setenv("SIMJUDGE_BASE_URL", url)
        monkeypatch.setenv("SIMJUDGE_API_KEY", "judge-key")
        remote_model = "openai-api/simjudge/sim/default"
        remote = judge_run(RUN, ModelSpec.parse(remote_model), session=session, concurrency=8)
    assert remote.requested == planned and remote.failed == 0
    assert remote.by_kind == local.by_kind
    a = {(r.id, sc.kind): (sc.value, sc.parse_status) for sc, r in _scores(session, "sim/default")}
    b = {(r.id, sc.kind): (sc.value, sc.parse_status) for sc, r in _scores(session, remote_model)}
    assert a == b


def test_scripted_judge_repair_error_and_failure(session: Session) -> None:
    _make_run(session, perturbations="none")  # baselines only: helpfulness alone
    counter = {"n": 0}

    def script(messages: list[tuple[str, str]]) -> str | None:
        case = json.loads(messages[1][1].rsplit("\n", 1)[-1])
        assert case["criteria"] == ["helpfulness"] and "memory" not in case
        counter["n"] += 1
        which = stable_int(case["question"], case["steps"]) % 4
        repair = len(messages) > 2
        if which == 0:
            return '<answer>{"helpfulness": 4}</answer>'
        if which == 1:
            return '<answer>{"helpfulness": 2}</answer>' if repair else '{"helpfulness": 2}'
        if which == 2:
            return '<answer>{"helpfulness": 7}</answer>'
        return None

    backend = ScriptedBackend(script)
    s = judge_run(RUN, ModelSpec.parse(backend.spec), session=session, backend=backend)
    rows = _scores(session, backend.spec)
    statuses = Counter(sc.parse_status for sc, _ in rows)
    assert statuses["repaired"] == s.repaired and statuses["error"] == s.errors
    assert s.failed == s.responses - len(rows)
    assert all(sc.value is None for sc, _ in rows if sc.parse_status == "error")
    assert {sc.value for sc, _ in rows if sc.parse_status == "repaired"} <= {2.0}
    backend.requests.clear()
    again = judge_run(RUN, ModelSpec.parse(backend.spec), session=session, backend=backend)
    assert again.requested == s.failed  # only the endpoint failures are asked again
    # Identical requests (two samples with the same text) are sent once.
    assert 0 < len(backend.requests) <= s.failed


def test_unknown_run(session: Session) -> None:
    with pytest.raises(NotFoundError):
        judge_run("nope", ModelSpec.parse("sim/default"), session=session)


def test_cli_judge(cli: Callable[..., Result], session: Session) -> None:
    planned = _make_run(session, perturbations="age")
    res = cli("judge", "--run", RUN, "--model", "sim/default", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["requested"] == planned and data["model"] == "sim/default"
    assert set(data["by_kind"]) == {"helpfulness", "distraction", "acknowledgement"}
    text = cli("judge", "--run", RUN, "--model", "sim/default")
    assert text.exit_code == 0 and f"{planned} already scored" in " ".join(text.output.split())
