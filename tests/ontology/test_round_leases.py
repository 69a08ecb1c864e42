"""A round whose labeling process is gone is interrupted, never "running"; resume finishes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from ontology.rounds import lease_key, round_history, run_round
from storage.errors import ConfigError
from storage.models import LabelingRound, StepLabel, WorkLease
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.ontology.conftest import cli_json, hold_lease


def _driftlens() -> str:
    return str(Path(sys.executable).with_name("driftlens"))


def _labels_of_round(number: int) -> tuple[int | None, int]:
    """(lease pid, labels stored) of a round, read in a fresh session."""
    with open_workspace_session(resolve_settings()) as s:
        row = s.exec(select(LabelingRound).where(LabelingRound.number == number)).first()
        if row is None:
            return None, 0
        count = s.exec(
            select(func.count()).select_from(StepLabel).where(StepLabel.round_id == row.id)
        ).one()
        lease = s.get(WorkLease, lease_key(row.id or 0))
        return (lease.pid if lease is not None else None), int(count)


def test_sigkilled_cli_round_is_interrupted_and_resume_completes_it(
    sim_run: str, workspace: Path, cli
) -> None:
    env = dict(os.environ, DRIFTLENS_WORKSPACE=str(workspace))
    env.pop("DRIFTLENS_DB_URL", None)
    args = ["ontology", "round", "--run", sim_run, "--labelers", "sim,keywords", "--sample", "300"]
    proc = subprocess.Popen(
        [_driftlens(), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    try:
        while True:  # kill it once the first chunk of labels is stored
            pid, stored = _labels_of_round(1)
            if pid == proc.pid and stored > 0:
                break
            assert proc.poll() is None, "the round finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    rows = cli_json(cli("ontology", "rounds", "--json"))
    assert [(r["round"], r["status"]) for r in rows] == [(1, "interrupted")]
    _, partial = _labels_of_round(1)

    done = cli_json(cli("ontology", "round", "--resume", "1", "--json"))
    assert done["round"] == 1 and done["n_responses"] == 300
    rows = cli_json(cli("ontology", "rounds", "--json"))
    assert [(r["round"], r["status"]) for r in rows] == [(1, "done")]
    _, complete = _labels_of_round(1)
    assert complete > partial
    reused = sum(s["reused"] for s in done["labeling"].values())
    assert reused > 0  # the labels stored before the kill were kept, not redone
    assert rows[0]["n_steps"] == done["n_steps"]
    assert json.dumps(rows)  # plain JSON


def test_a_live_lease_blocks_a_new_round_and_a_dead_one_holds_nothing(
    sim_run: str, session: Session
) -> None:
    first = run_round(sim_run, ["sim", "keywords"], session=session, sample=20, seed=1)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        hold_lease(session, first.round, sleeper.pid)
        assert [h.status for h in round_history(session=session)] == ["running"]
        with pytest.raises(ConfigError, match="round 1 is being labeled right now"):
            run_round(sim_run, ["sim", "keywords"], session=session, sample=20, seed=2)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert [h.status for h in round_history(session=session)] == ["interrupted"]
    second = run_round(sim_run, ["sim", "keywords"], session=session, sample=20, seed=2)
    assert second.round == 2


def test_a_round_stopped_in_process_is_interrupted(sim_run: str, session: Session) -> None:
    def stop(done: int, total: int) -> None:
        if done:
            raise KeyboardInterrupt  # what leaving a Streamlit page mid-run amounts to

    with pytest.raises(KeyboardInterrupt):
        run_round(sim_run, ["sim", "keywords"], session=session, sample=120, seed=2, progress=stop)
    session.expire_all()
    [summary] = round_history(session=session)
    assert summary.status == "interrupted" and summary.n_steps is None
    finished = run_round("", [], session=session, resume=summary.round)
    assert finished.agreement.n_steps > 0
    assert [h.status for h in round_history(session=session)] == ["done"]
