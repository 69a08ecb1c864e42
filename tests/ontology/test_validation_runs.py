"""Validation experiments started from a request: checks, lease, stored results."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlmodel import Session

from ontology.rounds import run_round
from ontology.validation_runs import (
    parse_request,
    run_experiment,
    save_result,
    stored_results,
)
from storage.errors import InputError
from storage.models import WorkLease
from storage.repo.leases import LeaseHeldError


def test_a_request_missing_what_its_experiment_needs_is_one_sentence() -> None:
    with pytest.raises(InputError, match="the stability experiment needs a round"):
        parse_request({"experiment": "stability", "labeler": "sim"})
    with pytest.raises(InputError, match="the robustness experiment needs a model"):
        parse_request({"experiment": "robustness", "round": 1, "labeler": "sim"})
    with pytest.raises(InputError, match="two or more labelers"):
        parse_request({"experiment": "cross", "run": "demo", "labelers": ["sim"]})
    with pytest.raises(InputError, match="validation experiment: sample:"):
        parse_request({"experiment": "cross", "run": "demo", "sample": 0})
    with pytest.raises(InputError, match="validation experiment: experiment:"):
        parse_request({"experiment": "vibes"})


def test_an_experiment_runs_stores_its_result_and_lists_it_newest_first(
    sim_run: str, session: Session, workspace: Path
) -> None:
    number = run_round(sim_run, ["sim", "keywords"], session=session, sample=30, seed=1).round
    noisy = parse_request(
        {"experiment": "stability", "round": number, "labeler": "sim:confuse=3~4@0.5;seed=1"}
    )
    report = run_experiment(noisy, session=session)
    assert 50.0 < report.rows[0]["agreement"] < 100.0
    assert session.get(WorkLease, "validation:stability") is None  # released
    save_result(noisy, report, workspace=workspace)
    human = parse_request({"experiment": "human", "round": number, "labeler": "sim"})
    save_result(human, run_experiment(human, session=session), workspace=workspace)
    (workspace / "validation" / "zz-broken.json").write_text("{", encoding="utf-8")
    results, problems = stored_results(workspace=workspace)
    assert [r.request.experiment for r in results] == ["human", "stability"]
    assert results[1].report.rows[0]["agreement"] == report.rows[0]["agreement"]
    assert results[1].request == noisy
    assert problems and problems[0].startswith("zz-broken.json: not a readable")


def test_a_second_process_cannot_run_the_same_experiment_at_once(
    sim_run: str, session: Session
) -> None:
    import socket

    number = run_round(sim_run, ["sim", "keywords"], session=session, sample=10, seed=1).round
    holder = subprocess.Popen(["sleep", "60"])
    try:
        session.add(
            WorkLease(
                key="validation:stability", host=socket.gethostname(), pid=holder.pid, token="t"
            )
        )
        session.commit()
        request = parse_request({"experiment": "stability", "round": number, "labeler": "sim"})
        with pytest.raises(LeaseHeldError, match="the stability experiment"):
            run_experiment(request, session=session)
    finally:
        holder.kill()
        holder.wait()
    # The holder is gone: its lease is taken over.
    assert run_experiment(request, session=session).rows[0]["agreement"] == 100.0
