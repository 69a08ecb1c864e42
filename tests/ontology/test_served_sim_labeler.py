"""A *served* simulator answers the studio's labeling requests like the in-process one."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select

from llm.sim.server import SimServer
from ontology.labelers.sim import studio_answerer
from ontology.rounds import run_round
from storage.models import StepLabel


def test_labeling_over_http_matches_the_in_process_sim_labeler(
    sim_run: str, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = "llm:openai-api/simstudio/sim/default"
    with SimServer(answerers=(studio_answerer(),)) as url:
        monkeypatch.setenv("SIMSTUDIO_BASE_URL", url)
        monkeypatch.setenv("SIMSTUDIO_API_KEY", "k")
        result = run_round(sim_run, ["sim", spec], session=session, sample=8, seed=2)
    stats = result.stats[spec]
    assert stats["labeled_now"] == 8 and stats["steps"] > 0
    assert not session.exec(select(StepLabel).where(StepLabel.parse_status == "unparseable")).all()
    # Both are perfect labelers reading the simulator's known leaves: full agreement.
    assert result.agreement.to_json()["mean_pairwise"] == pytest.approx(100.0)
