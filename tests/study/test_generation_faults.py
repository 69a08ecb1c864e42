"""Fault paths of ``driftlens generate`` over real HTTP: nothing lost, and it says so.

A chaos server scripts each request's failure by the first word of the question (the
baseline's user message is the question itself); the counting server holds requests so a
second process can meet a live first one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import Session, select

from storage.engine import make_engine
from storage.errors import ConfigError, InputError, ServiceError
from storage.models import GenerationRun, LLMCacheEntry, Response, WorkLease
from storage.repo.cache import cache_response
from storage.repo.leases import LeaseHeldError
from tests.llm.chaos_server import ChaosServer
from tests.study.counting_server import CountingServer

MODEL = "openai-api/chaos/chaos-model"


@pytest.fixture(scope="module")
def chaos_module() -> Iterator[ChaosServer]:
    server = ChaosServer(slow_s=3.0)
    with server:
        yield server


@pytest.fixture
def chaos(chaos_module: ChaosServer, monkeypatch: pytest.MonkeyPatch) -> ChaosServer:
    chaos_module.reset()
    monkeypatch.setenv("CHAOS_BASE_URL", chaos_module.url)
    monkeypatch.setenv("CHAOS_API_KEY", "test-key")
    return chaos_module


def _questions(tmp_path: Path, cli: Callable[..., object], *texts: str) -> None:
    path = tmp_path / f"q-{uuid.uuid4().hex[:6]}.jsonl"
    lines = [json.dumps({"id": f"f{i}", "text": t}) for i, t in enumerate(texts)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("questions", "import", str(path))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]


def _generate(cli: Callable[..., object], run: str, *extra: str) -> object:
    return cli(
        "generate", "--model", MODEL, "--run", run, "--perturbations", "none",
        "--samples", "1", "--concurrency", "2", *extra,
    )  # fmt: skip


def test_rejected_requests_exit_nonzero_and_say_a_rerun_will_not_help(
    chaos: ChaosServer, tmp_path: Path, cli: Callable[..., object]
) -> None:
    _questions(tmp_path, cli, "badreq Should I move?", "badreq Should I stay?")
    result = _generate(cli, "bad")
    assert result.exit_code == 3  # type: ignore[attr-defined]
    out = result.output  # type: ignore[attr-defined]
    assert "2 of 2 requests failed (2 bad_request)." in out
    assert "will not help" in out and "Run the same command again" not in out
    assert "Traceback" not in out


def test_server_errors_are_bounded_by_max_attempts_and_a_rerun_is_advised(
    chaos: ChaosServer, tmp_path: Path, cli: Callable[..., object]
) -> None:
    _questions(tmp_path, cli, "500x99 Should I move?", "ok Should I stay?")
    result = _generate(cli, "flaky", "--max-attempts", "2")
    assert result.exit_code == 3  # type: ignore[attr-defined]
    assert "1 of 2 requests failed (1 server)." in result.output  # type: ignore[attr-defined]
    assert "Run the same command again" in result.output  # type: ignore[attr-defined]
    assert chaos.stats.by_message["500x99 Should I move?"] == 2


def test_a_long_retry_after_is_named(
    chaos: ChaosServer, tmp_path: Path, cli: Callable[..., object]
) -> None:
    _questions(tmp_path, cli, "429x9:ra=500 Should I move?")
    result = _generate(cli, "limited")
    assert result.exit_code == 3  # type: ignore[attr-defined]
    out = " ".join(result.output.split())  # type: ignore[attr-defined]
    assert "The endpoint asked to wait 500 s (Retry-After)." in out
    assert chaos.stats.by_message["429x9:ra=500 Should I move?"] == 1  # not waited for


def test_timeout_option_and_env_bound_a_stalled_endpoint(
    chaos: ChaosServer,
    tmp_path: Path,
    cli: Callable[..., object],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A stalled answer still comes after the server's 3 s: a run that waited for it would
    # succeed (exit 0). Only a timeout that cut each attempt short fails the run with
    # "(1 timeout)", so the exit status proves the bound (no wall-clock assertion: the suite's
    # load made one flaky, 8.7 s against a 6 s bound).
    _questions(tmp_path, cli, "slowx9 Should I move?")
    result = _generate(cli, "stalled", "--timeout", "0.3", "--max-attempts", "2")
    assert result.exit_code == 3  # type: ignore[attr-defined]
    assert "(1 timeout)" in result.output  # type: ignore[attr-defined]
    assert chaos.stats.by_message["slowx9 Should I move?"] == 2
    monkeypatch.setenv("DRIFTLENS_REQUEST_TIMEOUT_S", "0.3")
    monkeypatch.setenv("DRIFTLENS_MAX_ATTEMPTS", "1")
    again = _generate(cli, "stalled")
    assert again.exit_code == 3  # type: ignore[attr-defined]
    assert chaos.stats.by_message["slowx9 Should I move?"] == 3
    assert "(1 timeout)" in again.output  # type: ignore[attr-defined]


def test_null_content_fails_is_not_cached_and_is_asked_again(
    chaos: ChaosServer, tmp_path: Path, cli: Callable[..., object], session: Session
) -> None:
    _questions(tmp_path, cli, "nullx3 Should I move?")
    first = _generate(cli, "nulls", "--max-attempts", "2")
    assert first.exit_code == 3  # type: ignore[attr-defined]
    assert "(1 bad_response)" in first.output  # type: ignore[attr-defined]
    [row] = session.exec(select(Response)).all()
    assert row.text is None and row.parse_status == "error"
    assert session.exec(select(LLMCacheEntry)).all() == []
    second = _generate(cli, "nulls", "--max-attempts", "2")  # 3rd attempt fails, 4th answers
    assert second.exit_code == 0, second.output  # type: ignore[attr-defined]
    assert chaos.stats.by_message["nullx3 Should I move?"] == 4
    session.expire_all()
    [row] = session.exec(select(Response)).all()
    assert row.text and row.parse_status == "ok"


def test_no_run_row_when_the_backend_cannot_start(
    cli: Callable[..., object], tmp_path: Path, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    _questions(tmp_path, cli, "Should I move?")
    monkeypatch.delenv("NOSUCH_BASE_URL", raising=False)
    result = cli("generate", "--model", "openai-api/nosuch/m", "--run", "never")
    assert isinstance(result.exception, ConfigError)  # type: ignore[attr-defined]
    assert "NOSUCH_BASE_URL" in str(result.exception)  # type: ignore[attr-defined]
    assert session.exec(select(GenerationRun)).all() == []
    assert session.exec(select(WorkLease)).all() == []


def test_nul_in_model_output_is_replaced_and_flagged(
    chaos: ChaosServer, tmp_path: Path, cli: Callable[..., object], session: Session
) -> None:
    _questions(tmp_path, cli, "nul Should I move?")
    result = _generate(cli, "nul")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    [row] = session.exec(select(Response)).all()
    assert row.text is not None and "\x00" not in row.text and "\ufffd" in row.text
    assert row.request["output_flags"] == ["nul_replaced"]


@pytest.mark.postgres
def test_nul_in_model_output_never_crashes_postgres(
    chaos: ChaosServer,
    tmp_path: Path,
    cli: Callable[..., object],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = os.environ.get("DRIFTLENS_TEST_PG_URL", "").strip()
    if not base:
        if os.environ.get("DRIFTLENS_REQUIRE_POSTGRES") == "1":
            pytest.fail("DRIFTLENS_TEST_PG_URL is not set")
        pytest.skip('DRIFTLENS_TEST_PG_URL is not set (eval "$(scripts/ci/postgres.sh)")')
    name = f"driftlens_nul_{uuid.uuid4().hex[:8]}"
    admin = make_engine(base).execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = base.rsplit("/", 1)[0] + "/" + name
    try:
        monkeypatch.setenv("DRIFTLENS_DB_URL", url)
        _questions(tmp_path, cli, "nul Should I move?")
        result = _generate(cli, "nul-pg", "--top-logprobs", "2")
        assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
        engine = make_engine(url)
        with Session(engine) as s:
            [row] = s.exec(select(Response)).all()
            assert row.text is not None and "\ufffd" in row.text
            assert row.request["output_flags"] == ["nul_replaced"]
            [entry] = s.exec(select(LLMCacheEntry)).all()
            assert "\ufffd" in cache_response(entry, session=s)["text"]
        engine.dispose()
    finally:
        from storage.engine import dispose_engines

        dispose_engines()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_nul_in_imported_questions_and_catalogs_is_rejected_with_the_line(
    tmp_path: Path, cli: Callable[..., object]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"text": "Fine question?"}\n{"text": "Bad\\u0000 question?"}\n', encoding="utf-8"
    )
    result = cli("questions", "import", str(questions))
    assert isinstance(result.exception, InputError)  # type: ignore[attr-defined]
    assert "line 2: contains a NUL character" in str(result.exception)  # type: ignore[attr-defined]
    catalog = tmp_path / "c.csv"
    catalog.write_text(
        "key,condition_class,category,text\n,noise,space,ok\n,noise,space,bad\x00line\n",
        encoding="utf-8",
    )
    result = cli("perturbations", "import", str(catalog))
    assert isinstance(result.exception, InputError)  # type: ignore[attr-defined]
    assert "line 3: contains a NUL character" in str(result.exception)  # type: ignore[attr-defined]
    yaml_catalog = tmp_path / "c.yaml"
    yaml_catalog.write_text(
        "name: c\ncategories:\n  - class: noise\n    category: space\n    stimuli:\n"
        '      - "bad\\0line"\n',
        encoding="utf-8",
    )
    result = cli("perturbations", "import", str(yaml_catalog))
    assert isinstance(result.exception, InputError)  # type: ignore[attr-defined]
    assert "line 6: contains a NUL character" in str(result.exception)  # type: ignore[attr-defined]


def test_second_generate_on_a_live_run_refuses_and_a_killed_holder_does_not_block(
    tmp_path: Path,
    cli: Callable[..., object],
    workspace: Path,
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The holder is a real separate process; the second and third ``generate`` run in
    # this test's process (another pid on the same host, as a second terminal would be).
    _questions(tmp_path, cli, "Should I move?", "Should I stay?")
    env = {**os.environ, "DRIFTLENS_WORKSPACE": str(workspace), "SLOW_API_KEY": "k"}
    monkeypatch.setenv("SLOW_API_KEY", "k")
    args = [
        "generate", "--model", "openai-api/slow/counting", "--run", "leased",
        "--perturbations", "none", "--samples", "2", "--concurrency", "2",
    ]  # fmt: skip
    server = CountingServer(answer_first=1)
    with server as url:
        env["SLOW_BASE_URL"] = url
        monkeypatch.setenv("SLOW_BASE_URL", url)
        holder = subprocess.Popen(
            [sys.executable, "-c", "from app.cli import main; main()", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 120
            while server.received < 3:  # one answered, two held in flight
                assert holder.poll() is None, holder.communicate()
                assert time.monotonic() < deadline, "the holder never sent its requests"
                time.sleep(0.05)
            second = cli(*args)
            error = second.exception  # type: ignore[attr-defined]
            assert isinstance(error, LeaseHeldError)
            message = str(error)
            assert "\n" not in message and f"pid {holder.pid} on" in message
            assert message.startswith("Run 'leased' is being generated by another process")
            assert server.received == 3  # the refused process sent nothing
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait()
        # The killed holder's lease row is still there, but a dead pid holds nothing.
        assert len(session.exec(select(WorkLease)).all()) == 1
        server.release()
        third = cli(*args)
        assert third.exit_code == 0, third.output  # type: ignore[attr-defined]
    session.expire_all()
    assert len(session.exec(select(Response)).all()) == 4
    assert session.exec(select(WorkLease)).all() == []  # released at the end


def test_filter_takes_budget_timeout_and_attempts_options(
    chaos: ChaosServer, tmp_path: Path, cli: Callable[..., object]
) -> None:
    # The filter's prompt does not start with the question, so the chaos server answers
    # normally (text that is not the filter's JSON: one repair request follows).
    _questions(tmp_path, cli, "Should I move?")
    result = cli(
        "questions", "filter", "--model", MODEL, "--max-tokens", "33",
        "--timeout", "5", "--max-attempts", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    bodies = chaos.stats.bodies
    assert len(bodies) == 2 and all(b["max_tokens"] == 33 for b in bodies)


def test_an_endpoint_refusing_every_request_is_one_fatal_error(
    chaos: ChaosServer,
    tmp_path: Path,
    cli: Callable[..., object],
    monkeypatch: pytest.MonkeyPatch,
    session: Session,
) -> None:
    _questions(tmp_path, cli, "ok Should I move?", "ok Should I stay?")
    monkeypatch.setenv("CHAOS_API_KEY", "wrong-key")
    result = _generate(cli, "refused")
    error = result.exception  # type: ignore[attr-defined]
    assert isinstance(error, ServiceError) and error.exit_code == 3
    assert "rejected the API key (401); check CHAOS_API_KEY" in str(error)
    assert "wrong-key" not in str(error)
    [run] = session.exec(select(GenerationRun)).all()
    assert run.status == "interrupted"
    assert session.exec(select(WorkLease)).all() == []  # released on the way out
