"""LLM labeling goes through the batched, concurrent, cached request path.

A served simulator (real HTTP, real ``openai`` client) answers the labeling prompts; a
thin ASGI wrapper counts the requests it receives. A rerun of ``label`` or of a round
sends none; labels lost from the database are restored from the request cache.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete
from sqlmodel import Session, select

from llm.sim.server import BackgroundServer, create_app
from ontology.labelers.sim import studio_answerer
from ontology.rounds import run_round
from storage.models import StepLabel
from study.reasoning.trajectories import label_run

SPEC = "llm:openai-api/simstudio/sim/default"


class _Counting:
    """ASGI wrapper counting chat requests and the most in flight at once."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.posts = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        counted = scope["type"] == "http" and scope["method"] == "POST"
        if counted:
            self.posts += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if counted:
                await asyncio.sleep(0.05)  # a model takes time: overlapping requests show
            await self.app(scope, receive, send)
        finally:
            if counted:
                self.in_flight -= 1


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Counting]:
    app = _Counting(create_app(answerers=(studio_answerer(),)))
    with BackgroundServer(app, path="/v1") as url:
        monkeypatch.setenv("SIMSTUDIO_BASE_URL", url)
        monkeypatch.setenv("SIMSTUDIO_API_KEY", "k")
        yield app


def test_label_run_batches_concurrently_and_a_rerun_sends_nothing(
    session: Session, served: _Counting, cli: Callable[..., Any], tmp_path: Path
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "".join(
            f'{{"id": "l{i}", "text": "Should I take offer {i} or wait?"}}\n' for i in range(4)
        ),
        encoding="utf-8",
    )
    assert cli("questions", "import", str(questions)).exit_code == 0
    run = "small"
    made = cli("generate", "--model", "sim/default", "--run", run, "--perturbations", "none")
    assert made.exit_code == 0, made.output
    sim_run = run
    first = cli("label", "--run", sim_run, "--labeler", SPEC, "--concurrency", "4", "--json")
    assert first.exit_code == 0, first.output
    sent = served.posts
    labels = session.exec(select(StepLabel)).all()
    summary = json.loads(first.stdout)
    assert summary["labeled_now"] >= 4 and labels
    assert sent > 0  # (identical prompts are sent once: fewer requests than responses)
    assert 1 < served.max_in_flight <= 4  # concurrent, bounded by --concurrency
    again = cli("label", "--run", sim_run, "--labeler", SPEC, "--json")
    assert again.exit_code == 0, again.output
    assert served.posts == sent  # everything already labeled: no request
    # Labels lost from the database come back from the request cache, still no request.
    session.execute(delete(StepLabel))
    session.commit()
    restored = label_run(sim_run, SPEC, session=session)
    assert restored.labeled_now > 0 and served.posts == sent
    assert len(session.exec(select(StepLabel)).all()) == len(labels)


def test_a_rerun_round_sends_no_request(sim_run: str, session: Session, served: _Counting) -> None:
    first = run_round(sim_run, ["keywords", SPEC], session=session, sample=6, seed=4)
    sent = served.posts
    assert sent >= 6 and first.stats[SPEC]["labeled_now"] == 6
    second = run_round(sim_run, ["keywords", SPEC], session=session, sample=6, seed=4)
    assert served.posts == sent
    assert second.stats[SPEC]["labeled_now"] == 0


def test_labeler_and_judge_budgets_follow_options_then_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from llm.limits import judge_max_tokens, use_limits
    from ontology.labelers.llm import _request

    with use_limits(labeler_max_tokens=300, judge_max_tokens=40):
        assert _request([("user", "x")], temperature=0, seed=0, repeat=0).sampling.max_tokens == 300
        assert judge_max_tokens(512) == 40
    monkeypatch.setenv("DRIFTLENS_LABELER_MAX_TOKENS", "700")
    assert _request([("user", "x")], temperature=0, seed=0, repeat=0).sampling.max_tokens == 700
    monkeypatch.delenv("DRIFTLENS_LABELER_MAX_TOKENS")
    assert _request([("user", "x")], temperature=0, seed=0, repeat=0).sampling.max_tokens == 1536
