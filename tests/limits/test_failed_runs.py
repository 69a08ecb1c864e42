"""A run whose requests failed exits 3 with the cause, on every instrument (as generate)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from sqlmodel import Session, select

from storage.models import Response
from tests.limits.conftest import Outcome
from tests.limits.failing_server import FailingServer

MODEL = "openai-api/fail/m"


@pytest.fixture(params=["500", "null"])
def failing(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FailingServer]:
    server = FailingServer(request.param)
    with server as url:
        monkeypatch.setenv("FAIL_BASE_URL", url)
        monkeypatch.setenv("FAIL_API_KEY", "k")
        monkeypatch.setenv("DRIFTLENS_MAX_ATTEMPTS", "1")
        yield server


@pytest.mark.parametrize("failing", ["500"], indirect=True)  # null: the disposition test
def test_conflicts_generate_against_a_failing_endpoint_exits_3(
    workspace: object, failing: FailingServer, run_main: Callable[..., Outcome]
) -> None:
    assert run_main("conflicts", "import", "--sample").code == 0
    res = run_main("conflicts", "generate", "--model", MODEL, "--run", "f", "--concurrency", "4")
    assert res.code == 3, res
    assert "Traceback" not in res.err
    assert "requests failed" in res.err and "Run the same command again" in res.err
    # a healthy endpoint then completes the run: the failed rows are asked again
    failing.healthy = True
    again = run_main("conflicts", "generate", "--model", MODEL, "--run", "f")
    assert again.code == 0, again
    assert "0 failed; status done" in again.out


def _small_batteries(tmp_path: Path) -> Path:
    from study.disposition.items import BatteryDocument, batteries_to_yaml, load_sample_batteries

    doc = load_sample_batteries()
    first = doc.batteries[0]
    small = BatteryDocument(
        batteries=[first.model_copy(update={"stems": [
            s.model_copy(update={"paraphrases": s.paraphrases[:1]}) for s in first.stems[:2]
        ]})]
    )  # fmt: skip
    path = tmp_path / "b.yaml"
    path.write_text(batteries_to_yaml(small), encoding="utf-8")
    return path


def test_disposition_run_exits_3_and_a_rerun_asks_the_failed_rows_again(
    workspace: object, tmp_path: Path, failing: FailingServer, run_main: Callable[..., Outcome]
) -> None:
    batteries = _small_batteries(tmp_path)
    add = ("disposition", "arms", "add", "ref", "--model", MODEL, "--study", "s",
           "--role", "reference", "--reasoning", "off", "--max-reasks", "0")  # fmt: skip
    assert run_main(*add).code == 0
    run = ("disposition", "run", "--study", "s", "--judge", "sim/default",
           "--batteries", str(batteries))  # fmt: skip
    res = run_main(*run)
    assert res.code == 3, res
    assert "4 of 4 requests failed" in res.err and "Traceback" not in res.err
    failing.healthy = True
    again = run_main(*run)
    assert again.code == 0, again
    # the failed rows were not "stored before": they are asked and answered now
    assert "0 stored before, 4 answered" in again.out, again.out


def test_a_stalled_endpoint_is_bounded_by_the_stall_budget(
    db: Callable[[], AbstractContextManager[Session]],
    monkeypatch: pytest.MonkeyPatch,
    run_main: Callable[..., Outcome],
) -> None:
    server = FailingServer("stall")
    with server as url:
        monkeypatch.setenv("FAIL_BASE_URL", url)
        monkeypatch.setenv("FAIL_API_KEY", "k")
        # each request may wait 600 s; the batch gives up after 2 s without any answer
        monkeypatch.setenv("DRIFTLENS_REQUEST_TIMEOUT_S", "600")
        monkeypatch.setenv("DRIFTLENS_STALL_BUDGET_S", "2")
        assert run_main("conflicts", "import", "--sample").code == 0
        res = run_main("conflicts", "generate", "--model", MODEL, "--run", "s")
        server.healthy = True  # lets the held handlers finish before the server stops
    assert res.code == 3, res
    assert "requests failed (" in res.err and "Run the same command again" in res.err
    with db() as session:
        errors = {r.error for r in session.exec(select(Response)).all()}
    assert len(errors) == 1 and "stall budget" in str(next(iter(errors)))
