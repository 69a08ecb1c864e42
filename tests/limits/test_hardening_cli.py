"""Issue 37: a wrong value, an empty name or a dripping endpoint ends in one line, at once."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from sqlmodel import Session, select

from storage.models import GenerationRun, Response
from tests.limits.conftest import Outcome
from tests.limits.failing_server import FailingServer

MODEL = "openai-api/drip/m"


def _limited_to_1_gib() -> None:
    # private writable memory only (RLIMIT_DATA): a billion-element range needs ~8 GB
    gib = 1 << 30
    resource.setrlimit(resource.RLIMIT_DATA, (gib, gib))


@pytest.mark.parametrize("text", ["0..1000000000", "-1000000000..3"])
def test_a_huge_distractor_range_is_refused_before_it_is_expanded(
    workspace: Path, text: str
) -> None:
    """The Bar: ``conflicts generate --distractors 0..1000000000`` refused in one line.

    The real command in its own process under a 1 GiB data limit: expanding the range
    first (as before: 12-13 GB) dies there with MemoryError instead of refusing. Never
    run in-process: on the old code it would take the test runner's memory with it.
    """
    res = subprocess.run(
        [sys.executable, "-m", "app.cli", "conflicts", "generate", "--run", "R",
         "--model", "sim/mc-balanced", "--distractors", text],
        capture_output=True,
        text=True,
        preexec_fn=_limited_to_1_gib,
        env={**os.environ, "DRIFTLENS_WORKSPACE": str(workspace), "COLUMNS": "200",
             "DRIFTLENS_DEBUG": ""},
        timeout=300,
        check=False,
    )  # fmt: skip
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, res.stderr[-2000:]
    assert len(lines) == 1 and "doses must lie in 0-6" in lines[0], res.stderr[-2000:]


@pytest.mark.parametrize("text", ["0,1000000000", "0..7"])
def test_conflicts_generate_refuses_an_out_of_range_dose_in_one_line(
    db: Callable[[], AbstractContextManager[Session]],
    run_main: Callable[..., Outcome],
    text: str,
) -> None:
    res = run_main(
        "conflicts", "generate", "--run", "R", "--model", "sim/mc-balanced", "--distractors", text
    )
    assert "doses must lie in 0-6" in res.one_line()
    with db() as session:
        assert session.exec(select(GenerationRun)).all() == []


def test_the_distractor_range_within_bounds_still_expands() -> None:
    from study.conflicts.plan import parse_doses

    assert parse_doses("0..6") == (0, 1, 2, 3, 4, 5, 6)
    assert parse_doses(" 2..4 ") == (2, 3, 4)
    assert parse_doses("6,0,6") == (0, 6)


@pytest.mark.parametrize(
    ("command", "name", "needle"),
    [
        (("generate", "--model", "sim/default"), "", "must not be empty"),
        (("generate", "--model", "sim/default"), "   ", "must not be empty"),
        (("generate", "--model", "sim/default"), "a,b", "comma"),
        (("conflicts", "generate", "--model", "sim/mc-balanced"), "", "must not be empty"),
        (("conflicts", "generate", "--model", "sim/mc-balanced"), "x,y", "comma"),
    ],
)
def test_an_empty_or_comma_run_name_is_refused_in_one_line_and_nothing_is_stored(
    db: Callable[[], AbstractContextManager[Session]],
    run_main: Callable[..., Outcome],
    command: tuple[str, ...],
    name: str,
    needle: str,
) -> None:
    line = run_main(*command, "--run", name).one_line()
    assert "--run" in line and needle in line, line
    with db() as session:
        assert session.exec(select(GenerationRun)).all() == []


def test_the_store_itself_refuses_an_empty_run_name(
    db: Callable[[], AbstractContextManager[Session]],
) -> None:
    """A script that skips every service check still cannot store a run named ''."""
    from storage.errors import InputError
    from storage.repo.runs import get_or_create_model_spec, get_or_create_run

    with db() as session:
        spec = get_or_create_model_spec("sim/default", provider="sim", model="default",
                                        session=session)  # fmt: skip
        assert spec.id is not None
        with pytest.raises(InputError, match="must not be empty"):
            get_or_create_run("", model_spec_id=spec.id, prompt_version="p", sampling={},
                              session=session)  # fmt: skip


@pytest.fixture
def drip(monkeypatch: pytest.MonkeyPatch) -> Iterator[FailingServer]:
    server = FailingServer("drip", drip_s=2.0)
    with server as url:
        monkeypatch.setenv("DRIP_BASE_URL", url)
        monkeypatch.setenv("DRIP_API_KEY", "k")
        # the batch's own budget well above two attempts: what ends each attempt here is
        # the request's deadline (the default budget is tested on its own below)
        monkeypatch.setenv("DRIFTLENS_STALL_BUDGET_S", "120")
        yield server
        server.healthy = True  # ends the drips still held before the server stops


def test_generate_against_a_dripping_endpoint_times_out_each_attempt_and_retries(
    workspace: object,
    tmp_path: Path,
    db: Callable[[], AbstractContextManager[Session]],
    drip: FailingServer,
    run_main: Callable[..., Outcome],
) -> None:
    """One byte every 2 s never trips a per-read 5 s timeout; the whole-request one does.

    Before, no attempt ever ended: the batch waited out its stall budget, sent no retry,
    and stored "stall budget" as every row's error. Now each attempt ends
    at 5 s, the second attempt is sent, and each row says the answer did not finish.
    """
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"q{i}", "text": f"What is {i} + 1?"}) + "\n" for i in range(3)),
        encoding="utf-8",
    )
    assert run_main("questions", "import", str(path)).code == 0
    res = run_main(
        "generate", "--model", MODEL, "--run", "d", "--perturbations", "none", "--samples", "1",
        "--timeout", "5", "--max-attempts", "2",
    )  # fmt: skip
    assert res.code == 3, res
    assert "Traceback" not in res.err + res.out
    assert len([ln for ln in res.err.splitlines() if ln.strip()]) == 1, res.err
    assert drip.requests == 3 * 2  # every request was tried twice: the retry was sent
    with db() as session:
        rows = session.exec(select(Response)).all()
    assert len(rows) == 3
    assert {r.error for r in rows} == {
        f"Model endpoint {drip.url} did not finish its answer within 5 s."
    }


def test_the_default_stall_budget_follows_the_request_limits() -> None:
    from llm.limits import stall_budget_s

    # attempts x timeout + the backoff waits + one timeout, never under 2.5 timeouts
    assert stall_budget_s(
        {"DRIFTLENS_REQUEST_TIMEOUT_S": "5", "DRIFTLENS_MAX_ATTEMPTS": "2"}
    ) == pytest.approx(2 * 5 + 0.5 + 5)
    assert stall_budget_s(
        {"DRIFTLENS_REQUEST_TIMEOUT_S": "10", "DRIFTLENS_MAX_ATTEMPTS": "3"}
    ) == pytest.approx(30 + 0.5 + 1.0 + 10)
    assert stall_budget_s(
        {"DRIFTLENS_REQUEST_TIMEOUT_S": "5", "DRIFTLENS_MAX_ATTEMPTS": "1"}
    ) == pytest.approx(12.5)
    assert stall_budget_s({}) == 300.0  # the defaults (120 s, 6 attempts): capped
    assert stall_budget_s({"DRIFTLENS_REQUEST_TIMEOUT_S": "600"}) == 1500.0  # a slow engine


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("sources", "export-sft", "--out", "x.jsonl", "--n", "1000000000"), "--n"),
        (("judges", "robustness", "--instrument", "conflicts", "--run", "r", "--resamples",
          "1000000000"), "--resamples"),
        (("compare", "a", "b", "--top", "-1"), "--top"),
        (("demo", "--samples", "1000000000"), "--samples"),
    ],
)  # fmt: skip
def test_counts_without_an_upper_bound_before_are_refused_first(
    workspace: Path,
    db: Callable[[], AbstractContextManager[Session]],
    run_main: Callable[..., Outcome],
    args: tuple[str, ...],
    needle: str,
) -> None:
    line = run_main(*args).one_line()
    assert needle in line, line
    # refused before anything was written: no SFT file, no seeded workspace
    assert not (workspace / "x.jsonl").exists() and not Path("x.jsonl").exists()
    assert not (workspace / "reports").exists()
    from storage.models import Question

    with db() as session:
        assert session.exec(select(Question)).all() == []


def test_the_services_refuse_the_same_counts_without_the_cli(
    db: Callable[[], AbstractContextManager[Session]], tmp_path: Path
) -> None:
    """A page or a script calling the service directly meets the same bounds."""
    from study.compare.service import compare_runs
    from study.compare.types import CompareOptions
    from study.limits import LimitError
    from study.reasoning.demo import run_demo
    from study.sources.items import shipped_items
    from study.sources.sft import sft_examples

    with pytest.raises(LimitError, match="--n"):
        sft_examples(shipped_items(), n=1_000_000_000)
    with db() as session:
        with pytest.raises(LimitError, match="--top"):
            compare_runs(["a", "b"], instrument="disposition", session=session,
                         options=CompareOptions(top_items=-1))  # fmt: skip
        with pytest.raises(LimitError, match="--samples"):
            run_demo(session=session, out_dir=tmp_path / "r", samples=1_000_000_000)
    with db() as session:
        from storage.models import Question

        assert session.exec(select(Question)).all() == []  # the demo seeded nothing


@pytest.mark.parametrize("address", ["notaport", "ray://host:", "127.0.0.1:99999", ":10001"])
def test_a_malformed_ray_address_is_refused_up_front(
    run_main: Callable[..., Outcome], address: str
) -> None:
    # refused before the SQLite check and before Ray is imported or asked anything
    line = run_main(
        "generate", "--model", "sim/default", "--run", "g", "--executor", "ray",
        "--address", address,
    ).one_line()  # fmt: skip
    assert "is not a Ray address" in line and "SQLite" not in line, line


def test_an_unreachable_ray_address_is_one_line_without_calling_ray_mock(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens on the port: one sentence, before ``ray.init`` (mock: no Ray call)."""
    import socket

    from storage.errors import ConfigError
    from study.cluster.ray_executor import RayExecutor

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    class NoInit:
        def is_initialized(self) -> bool:
            return False

        def init(self, **_: object) -> None:
            raise AssertionError("ray.init was called for an unreachable address")

        def shutdown(self) -> None:
            pass

    monkeypatch.setattr("study.cluster.ray_executor._ray", lambda: NoInit())
    with pytest.raises(ConfigError, match="No Ray cluster answers at") as info:
        RayExecutor(address=f"ray://127.0.0.1:{port}").map(len, [[1]], poll=lambda: None)
    assert "\n" not in str(info.value)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize(
    "command",
    [("generate", "--perturbations", "none"), ("conflicts", "generate")],
    ids=lambda c: " ".join(c),
)
def test_an_unconfigured_endpoint_is_refused_before_a_run_is_stored(
    db: Callable[[], AbstractContextManager[Session]],
    run_main: Callable[..., Outcome],
    monkeypatch: pytest.MonkeyPatch,
    command: tuple[str, ...],
) -> None:
    monkeypatch.delenv("NOTHERE_BASE_URL", raising=False)
    assert run_main("questions", "import", "--sample").code == 0
    assert run_main("conflicts", "import", "--sample").code == 0
    res = run_main(*command, "--model", "openai-api/nothere/m", "--run", "x")
    assert "NOTHERE_BASE_URL" in res.one_line()
    assert "Plan:" not in res.out  # said before the plan, not after it
    with db() as session:
        assert session.exec(select(GenerationRun)).all() == []


def test_a_page_job_with_an_unconfigured_endpoint_is_never_recorded(
    workspace: Path,
    db: Callable[[], AbstractContextManager[Session]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The service every page launches through refuses it: no failed job, no Resume."""
    from storage.errors import ConfigError
    from storage.job_models import Job
    from storage.settings import resolve_settings
    from study.jobs import submit_job

    monkeypatch.delenv("NOTHERE_BASE_URL", raising=False)
    settings = resolve_settings(workspace=workspace)
    with db() as session:
        with pytest.raises(ConfigError, match="NOTHERE_BASE_URL"):
            submit_job(
                session=session,
                workspace=workspace,
                db_url=settings.db_url,
                kind="generate",
                title="t",
                argv=["generate", "--model", "openai-api/nothere/m", "--run", "x"],
            )
        assert session.exec(select(Job)).all() == []
