"""``--review pause``: the loop stops at each gated proposal until a researcher decides."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_runner import CliOutcome, cli_runner

LABELERS = "sim:definitions;seed=1,sim:definitions;seed=2,sim:definitions;seed=3"


@pytest.fixture
def driftlens(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliOutcome]:
    return cli_runner(capsys, monkeypatch)


def _refine(driftlens: Callable[..., CliOutcome], out: Path, rewriter: str) -> dict:  # type: ignore[type-arg,unused-ignore]
    res = driftlens(
        "ontology", "refine", "--run", "demo", "--ontology-version", "original",
        "--labelers", LABELERS, "--rewriter", rewriter, "--sample", "30",
        "--max-rounds", "3", "--review", "pause", "--json", str(out),
    )  # fmt: skip
    assert res.code == 0, res.err
    return json.loads(out.read_text(encoding="utf-8"))


def test_pause_waits_for_the_researcher_then_goes_on(
    sim_run: str, driftlens: Callable[..., CliOutcome], tmp_path: Path
) -> None:
    out = tmp_path / "loop.json"
    first = _refine(driftlens, out, "sim/rewriter-operational")
    assert first["status"] == "paused"
    [waiting] = [d for d in first["decisions"] if d["decision"] == "awaiting review"]
    assert waiting["gate"]["verdict"] == "accepted"
    # running again before a decision changes nothing
    assert _refine(driftlens, out, "sim/rewriter-operational") == first
    accepted = driftlens("ontology", "accept", str(waiting["proposal"]))
    assert accepted.code == 0, accepted.err
    # the impact preview: the loop's own round labeled run demo under the base version
    assert "Impact: run demo: about" in accepted.out
    assert waiting["gate"]["impact"]["share"] > 0
    after = _refine(driftlens, out, "sim/rewriter-operational")
    decided = [d for d in after["decisions"] if d["proposal"] == waiting["proposal"]]
    assert decided[0]["decision"] == "accepted (researcher)"
    assert decided[0]["version"] == "original@2"
    assert len(after["rounds"]) == 2  # the loop went on to the next round


def test_accepting_what_the_gate_rejected_needs_a_reason(
    sim_run: str, driftlens: Callable[..., CliOutcome], tmp_path: Path
) -> None:
    data = _refine(driftlens, tmp_path / "blur.json", "sim/rewriter-blur")
    [waiting] = [d for d in data["decisions"] if d["decision"] == "awaiting review"]
    assert waiting["gate"]["verdict"] == "rejected"
    proposal = str(waiting["proposal"])
    line = driftlens("ontology", "accept", proposal).one_line()
    assert "--reason" in line and "rejected proposal" in line
    ok = driftlens("ontology", "accept", proposal, "--reason", "reviewed by hand")
    assert ok.code == 0, ok.err
    again = _refine(driftlens, tmp_path / "blur.json", "sim/rewriter-blur")
    decided = next(d for d in again["decisions"] if d["proposal"] == waiting["proposal"])
    assert decided["decision"] == "accepted (researcher)"
    assert "accepted against the gate: reviewed by hand" in decided["reasons"]


def test_a_second_process_on_a_running_loop_is_refused(
    sim_run: str, driftlens: Callable[..., CliOutcome], tmp_path: Path, db
) -> None:
    import os
    import socket

    from storage.models import WorkLease

    _refine(driftlens, tmp_path / "loop.json", "sim/rewriter-operational")  # paused: loop 1
    with db() as session:
        session.add(
            WorkLease(key="refinement_loop:1", host=socket.gethostname(), pid=os.getppid(),
                      token="other")
        )  # fmt: skip
        session.commit()
    res = driftlens(
        "ontology", "refine", "--run", "demo", "--ontology-version", "original",
        "--labelers", LABELERS, "--rewriter", "sim/rewriter-operational", "--sample", "30",
        "--max-rounds", "3", "--review", "pause",
    )  # fmt: skip
    assert "running in another process" in res.one_line()
