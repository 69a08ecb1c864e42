"""Generation runs against the real simulator over HTTP, resume, kill/resume, export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sqlmodel import select

from llm.sim.presets import SimPreset
from llm.sim.server import SimServer
from llm.specs import ModelSpec
from storage.errors import ConfigError, InputError
from storage.models import GenerationRun, Question, Response
from storage.repo.requests import stored_request
from study.prompts import INSTRUCTION, split_user_message
from study.reasoning.exports import RESPONSE_FIELDS
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.parsing import STATUS_OK
from study.reasoning.plan import build_plan, request_seed, select_perturbations
from tests.study.counting_server import CountingServer, kill_once_stored

QUESTIONS = [
    {"id": "g1", "text": "Should a city fund buses or roads first?", "domains": ["other"]},
    {"id": "g2", "text": "Is it better to rent or to buy a home?", "domains": ["finance"]},
    {"id": "g3", "text": "Should you lend money to a friend?", "domains": ["relationship"]},
]


@pytest.fixture
def three_questions(tmp_path: Path, cli) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n", encoding="utf-8")
    assert cli("questions", "import", str(path)).exit_code == 0
    return path


def _rows(session) -> list[Response]:
    return list(session.exec(select(Response)).all())


# ------------------------------------------------------------------------ pure parts


def test_request_seed_is_deterministic_and_distinct() -> None:
    a = request_seed(7, "q1", "baseline", 0)
    assert a == request_seed(7, "q1", "baseline", 0)
    others = {
        request_seed(8, "q1", "baseline", 0),
        request_seed(7, "q2", "baseline", 0),
        request_seed(7, "q1", "noise/filler/1", 0),
        request_seed(7, "q1", "baseline", 1),
    }
    assert a not in others and len(others) == 4
    assert 0 <= a < 2**31


def test_selection_and_plan(session) -> None:
    from study.catalog import catalog_perturbations, ensure_default_catalog

    catalog = ensure_default_catalog(session=session)
    assert catalog.id is not None
    perts = catalog_perturbations(catalog.id, session=session)
    assert len(select_perturbations(perts, "all")) == 98
    assert select_perturbations(perts, "none") == []
    assert len(select_perturbations(perts, "noise")) == 8
    assert len(select_perturbations(perts, "age,bereavement")) == 9
    assert [p.key for p in select_perturbations(perts, "attribute/age/2")] == ["attribute/age/2"]
    with pytest.raises(InputError, match="planet"):
        select_perturbations(perts, "age,planet")
    questions = [Question(id=i, external_id=f"q{i}", text=f"Q{i}?") for i in (1, 2)]
    plan = build_plan(questions, select_perturbations(perts, "filler"), samples=2, run_seed=1)
    assert len(plan) == 2 * (1 + 3) * 2
    assert len({item.key for item in plan}) == len(plan)
    assert plan[0].condition == "baseline" and plan[0].memory_line == ""


# ------------------------------------------------------------ simulator over HTTP


def test_generation_over_http_with_real_simulator(
    three_questions: Path,
    db,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    preset = SimPreset(
        name="flaky",
        class_doses={"noise": 0.0, "attribute": 0.3, "life_event": 0.6},
        malformed_rate=0.4,
    )
    options = GenerationOptions(
        model=ModelSpec.parse("openai-api/simhttp/sim/flaky"),
        run="http",
        perturbations="filler,age",
        samples=2,
        concurrency=4,
    )
    with SimServer(presets={"flaky": preset}) as url:
        monkeypatch.setenv("SIMHTTP_BASE_URL", url)
        monkeypatch.setenv("SIMHTTP_API_KEY", "anything")
        with db() as session:
            summary = run_generation(options, session=session)
        expected = 3 * (1 + 3 + 6) * 2
        assert (summary.planned, summary.requested, summary.failed) == (expected, expected, 0)
        with db() as session:
            rows = _rows(session)
            run = session.exec(select(GenerationRun)).one()
            whole = {r.id: stored_request(r, session=session) for r in rows}
        assert len(rows) == expected
        assert len({(r.question_id, r.condition, r.sample) for r in rows}) == expected
        assert run.simulated and run.status == "done"
        malformed = [r for r in rows if r.parse_status != STATUS_OK]
        assert malformed, "a 40% malformed rate must flag some responses"
        for r in rows:
            assert r.text  # raw text always stored, malformed or not
            assert r.finish_reason == "stop" and r.completion_tokens and r.latency_ms is not None
            request = whole[r.id]
            assert request["messages"][0] == {"role": "system", "content": INSTRUCTION}
            assert request["model"] == "openai-api/simhttp/sim/flaky"
            assert request["sampling"]["temperature"] == 0.7
            assert request["sampling"]["seed"] is not None
            assert "anything" not in json.dumps(r.request)  # never the key
            memory, question = split_user_message(request["messages"][1]["content"])
            assert question in {q["text"] for q in QUESTIONS}
            assert (memory == "") == (r.condition == "baseline")
            assert r.seed is not None and r.error is None
        ok = [r for r in rows if r.parse_status == STATUS_OK]
        assert ok and all(r.steps and r.answer for r in ok)

        # Re-running the same command asks nothing; different sampling is refused.
        with db() as session:
            again = run_generation(options, session=session)
        assert (again.already_done, again.requested) == (expected, 0)
        with pytest.raises(ConfigError, match="different sampling"), db() as session:
            run_generation(
                GenerationOptions(**{**options.__dict__, "temperature": 0.2}), session=session
            )
        with pytest.raises(ConfigError, match="different model"), db() as session:
            run_generation(
                GenerationOptions(**{**options.__dict__, "model": ModelSpec.parse("sim/default")}),
                session=session,
            )


def test_failed_requests_are_stored_then_retried(
    three_questions: Path,
    db,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = GenerationOptions(
        model=ModelSpec.parse("openai-api/simhttp/sim/default"),
        run="retry",
        perturbations="none",
        samples=1,
        concurrency=2,
    )
    with SimServer() as url:
        # A model the server does not have: every request fails, the batch is refused.
        monkeypatch.setenv("SIMHTTP_BASE_URL", url)
        monkeypatch.setenv("SIMHTTP_API_KEY", "k")
        from storage.errors import ServiceError

        bad = GenerationOptions(
            **{**options.__dict__, "model": ModelSpec.parse("openai-api/simhttp/sim/nope")}
        )
        with pytest.raises(ServiceError), db() as session:
            run_generation(bad, session=session)
        with db() as session:
            failed = _rows(session)
        assert len(failed) == 3 and all(r.error and r.parse_status == "error" for r in failed)
        assert all(r.text is None for r in failed)
        # Same run again against the right model: the run's model is fixed, so retrying
        # means re-running the same command once the server knows the model.
    with SimServer(presets={"nope": SimPreset(name="nope", class_doses={})}) as url:
        monkeypatch.setenv("SIMHTTP_BASE_URL", url)
        with db() as session:
            summary = run_generation(bad, session=session)
        assert (summary.already_done, summary.requested, summary.failed) == (0, 3, 0)
        with db() as session:
            rows = _rows(session)
        assert len(rows) == 3 and all(r.error is None and r.text for r in rows)


def test_cli_generate_in_process_sim_and_export(
    three_questions: Path,
    cli,
    tmp_path: Path,
) -> None:
    res = cli(
        "generate",
        "--model",
        "sim/default",
        "--run",
        "demo",
        "--perturbations",
        "noise,bereavement",
        "--samples",
        "2",
        "--json",
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)  # stdout is the JSON alone (the plan line: stderr)
    assert summary["planned"] == 3 * (1 + 8 + 3) * 2 and summary["simulated"] is True
    assert "Plan: 3 questions x 12 conditions x 2 samples = 72 requests" in res.stderr
    out = tmp_path / "out" / "demo.jsonl"
    res = cli("export", "responses", "--run", "demo", "--out", str(out))
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == summary["planned"]
    assert all(tuple(r) == RESPONSE_FIELDS for r in records)
    base = [r for r in records if r["condition"] == "baseline"]
    assert base and all(
        r["perturbation_text"] == "" and r["condition_class"] == "none" for r in base
    )
    tabs = [r for r in records if r["condition"] == "noise/whitespace/3"]
    assert tabs and all(r["perturbation_text"] == "\t" for r in tabs)
    assert {r["model"] for r in records} == {"sim/default"}
    assert {r["question_id"] for r in records} == {"g1", "g2", "g3"}
    assert all(isinstance(r["steps"], list) for r in records)
    missing = cli("export", "responses", "--run", "nope", "--out", str(out))
    assert missing.exit_code != 0 and "nope" in str(missing.exception)
    bad = cli("generate", "--model", "sim/default", "--run", "demo", "--temperature", "0.1")
    assert isinstance(bad.exception, ConfigError)


def test_no_questions_is_an_input_error(cli) -> None:
    res = cli("generate", "--model", "sim/default", "--run", "x")
    assert isinstance(res.exception, InputError) and "questions import" in str(res.exception)


# ------------------------------------------------------------------ kill and resume


def _stored(db_path: Path) -> list[tuple[int, str, int, str, int | None]]:
    import sqlite3

    with sqlite3.connect(db_path) as conn:
        return conn.execute(
            "SELECT question_id, condition, sample, json_extract(p.messages, '$[#-1].content'),"
            " seed FROM response r JOIN prompt p ON p.id = r.prompt_id"
        ).fetchall()


def test_kill_midway_and_resume(three_questions: Path, workspace: Path) -> None:
    per_run = 3 * (1 + 3) * 2  # questions x (baseline + 3 fillers) x samples
    env = {
        **os.environ,
        "DRIFTLENS_WORKSPACE": str(workspace),
        "SLOW_API_KEY": "secret-test-key",
    }
    command = [
        sys.executable,
        "-c",
        "from app.cli import main; main()",
        "generate",
        "--model",
        "openai-api/slow/counting",
        "--run",
        "killme",
        "--perturbations",
        "filler",
        "--samples",
        "2",
        "--concurrency",
        "2",
    ]
    db_path = workspace / "driftlens.db"
    server = CountingServer(answer_first=12)
    with server as url:
        env["SLOW_BASE_URL"] = url
        # The 12 answers are committed within the commit interval (2 s) although no
        # further answer arrives; the rest is held.
        kill_once_stored(command, env, lambda: len(_stored(db_path)), 8)
        before = _stored(db_path)
        assert 8 <= len(before) < per_run
        received_before = server.received

        server.release()
        done = subprocess.run(
            [*command, "--json"], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        resumed = json.loads(done.stdout)
        counts = Counter(server.seen)
    after = _stored(db_path)
    assert len(after) == per_run
    assert len({(q, c, s) for q, c, s, _user, _seed in after}) == per_run
    for _q, _c, _s, user, seed in before:
        assert counts[(user, seed)] == 1, "a stored key was requested again"
    # The resumed run planned only the keys that were not stored, and sent no more
    # requests than that (fewer when answers not yet stored were already cached).
    assert resumed["already_done"] == len(before)
    assert resumed["requested"] == per_run - len(before)
    assert resumed["status"] == "done"
    assert sum(counts.values()) - received_before <= per_run - len(before)
    for suffix in ("", "-wal"):
        stored = Path(f"{db_path}{suffix}")
        if stored.exists():
            assert b"secret-test-key" not in stored.read_bytes()
