"""Issue 37: the stall budget covers a whole run, not each of its batches.

An endpoint that accepts requests and never answers (``FailingServer("stall")``) held a
run for one stall budget per batch: a disposition arm's re-ask rounds, source reliance's
bare phase then its probes phase each waited the budget out again (900 s and more with
the defaults). Now the first budget spent without any answer ends the run: later batches
to the same endpoint fail at once without sending anything, the run exits 3 in one line,
what was answered is kept, and a rerun against a healthy endpoint finishes the run
without asking anything twice.

The assertions count the requests the endpoint received (not seconds): one batch's worth
means the run stopped after one budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.limits.conftest import Outcome
from tests.limits.failing_server import FailingServer

MODEL = "openai-api/stall/m"


@pytest.fixture
def stall(monkeypatch: pytest.MonkeyPatch) -> Iterator[FailingServer]:
    server = FailingServer("stall")
    with server as url:
        monkeypatch.setenv("STALL_BASE_URL", url)
        monkeypatch.setenv("STALL_API_KEY", "k")
        # each request could wait 600 s: what ends the run is the budget of 3 s
        monkeypatch.setenv("DRIFTLENS_REQUEST_TIMEOUT_S", "600")
        monkeypatch.setenv("DRIFTLENS_STALL_BUDGET_S", "3")
        yield server
        server.healthy = True  # lets the held handlers finish before the server stops


def _one_line_exit_3(res: Outcome) -> None:
    assert res.code == 3, res
    assert "Traceback" not in res.err + res.out
    assert len([ln for ln in res.err.splitlines() if ln.strip()]) == 1, res.err


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


def test_a_disposition_run_stops_after_one_budget_not_one_per_reask_round(
    workspace: object, tmp_path: Path, stall: FailingServer, run_main: Callable[..., Outcome]
) -> None:
    """Two arms x 3 re-asks: on main every round and every arm waited the budget again."""
    batteries = _small_batteries(tmp_path)
    for arm in ("a", "b"):
        add = ("disposition", "arms", "add", arm, "--model", MODEL, "--study", "s",
               "--role", "reference" if arm == "a" else "treatment", "--reasoning", "off",
               "--max-reasks", "3")  # fmt: skip
        assert run_main(*add).code == 0
    run = ("disposition", "run", "--study", "s", "--judge", "sim/default",
           "--batteries", str(batteries))  # fmt: skip
    res = run_main(*run)
    _one_line_exit_3(res)
    # at most arm a's first round (2 probes x 2 samples; fewer when the client was slow
    # to send them): no re-ask round, nothing of arm b (32 requests before)
    first = stall.requests
    assert first <= 4, (first, res)
    stall.healthy = True
    again = run_main(*run)
    assert again.code == 0, again
    # the 4 distinct requests (arm b asks what arm a asks: cached), each sent once
    assert stall.requests - first == 4


def test_a_sources_run_stops_after_the_bare_phase_stalls(
    workspace: object, tmp_path: Path, stall: FailingServer, run_main: Callable[..., Outcome]
) -> None:
    """The bare phase and the probes phase each waited the budget out on main."""
    args = ("sources", "run", "--model", MODEL, "--limit", "1", "--no-logprobs",
            "--run", "st", "--out", str(tmp_path / "r"))  # fmt: skip
    res = run_main(*args)
    _one_line_exit_3(res)
    assert stall.requests <= 1, stall.requests  # the bare probe only (15 before)
    assert not (tmp_path / "r").exists()


def test_generate_and_conflicts_runs_stop_after_one_budget(
    workspace: object, tmp_path: Path, stall: FailingServer, run_main: Callable[..., Outcome]
) -> None:
    """Single-batch runs were bounded before; they stay so under the run's budget."""
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"q{i}", "text": f"What is {i} + 1?"}) + "\n" for i in range(3)),
        encoding="utf-8",
    )
    assert run_main("questions", "import", str(path)).code == 0
    res = run_main("generate", "--model", MODEL, "--run", "g", "--perturbations", "none",
                   "--samples", "1")  # fmt: skip
    _one_line_exit_3(res)
    assert stall.requests <= 3
    assert run_main("conflicts", "import", "--sample").code == 0
    before = stall.requests
    res = run_main("conflicts", "generate", "--model", MODEL, "--run", "c", "--concurrency", "4")
    _one_line_exit_3(res)
    assert stall.requests - before <= 4  # the 4 in flight (--concurrency 4), no more


def test_the_run_budget_counts_only_time_spent_waiting_and_an_answer_restarts_it() -> None:
    """Unit: the clock of one endpoint across batches (no server)."""
    from llm.stall import StallClock

    now = [100.0]
    clock = StallClock(now=lambda: now[0])
    clock.begin()
    now[0] += 1.5
    clock.end()
    now[0] += 50.0  # local work between batches is not waiting on the endpoint
    assert clock.waited() == pytest.approx(1.5)
    clock.begin()
    now[0] += 1.0
    assert clock.waited() == pytest.approx(2.5)  # the second batch adds to the first
    clock.answered()
    now[0] += 0.25
    assert clock.waited() == pytest.approx(0.25)
    clock.end()
    assert clock.stalled is None


def test_a_disposition_run_against_a_dripping_endpoint_stops_after_the_default_budget(
    workspace: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    run_main: Callable[..., Outcome],
) -> None:  # fmt: skip
    """The Bar's drip (a byte every 2 s) with ``--timeout 5 --max-attempts 2``, default budget.

    Each attempt ends at 5 s (a timeout, not an answer), so every re-ask round was sent
    again: 2 arms x 4 rounds x 4 requests x 2 attempts = 64 requests on main, 84 s and more.
    The run's budget (2 x 5 + 0.5 + 5 = 15.5 s) now ends it during the first re-ask round.
    """
    monkeypatch.delenv("DRIFTLENS_STALL_BUDGET_S", raising=False)
    monkeypatch.setenv("DRIFTLENS_REQUEST_TIMEOUT_S", "5")
    monkeypatch.setenv("DRIFTLENS_MAX_ATTEMPTS", "2")
    batteries = _small_batteries(tmp_path)
    drip = FailingServer("drip", drip_s=2.0)
    with drip as url:
        monkeypatch.setenv("DRIP_BASE_URL", url)
        monkeypatch.setenv("DRIP_API_KEY", "k")
        for arm in ("a", "b"):
            add = ("disposition", "arms", "add", arm, "--model", "openai-api/drip/m",
                   "--study", "s", "--role", "reference" if arm == "a" else "treatment",
                   "--reasoning", "off", "--max-reasks", "3")  # fmt: skip
            assert run_main(*add).code == 0
        res = run_main("disposition", "run", "--study", "s", "--judge", "sim/default",
                       "--batteries", str(batteries))  # fmt: skip
        drip.healthy = True  # ends the drips still held before the server stops
    _one_line_exit_3(res)
    # round 0 (4 requests x 2 attempts) and at most the part of round 1 sent before the
    # budget ran out; nothing of rounds 2-3 or of arm b
    assert drip.requests <= 16, drip.requests
