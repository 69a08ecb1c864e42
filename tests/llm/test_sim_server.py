"""The simulator's OpenAI-compatible API, through the real ``openai`` client."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from llm.batch import run_chat_batch
from llm.sim.registry import all_presets
from llm.sim.server import SimServer
from llm.specs import ModelSpec
from llm.types import ChatMessage, ChatRequest, SamplingParams
from storage.errors import ServiceError
from study.reasoning.sim.generator import simulate

KEY = "sim-test-key"
QUESTION = "Should I take the stable job or start my own business?"


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with SimServer(api_key=KEY) as url:
        yield url


def test_chat_completion_through_the_openai_client(sim_url: str) -> None:
    client = openai.OpenAI(base_url=sim_url, api_key=KEY, max_retries=0)
    resp = client.chat.completions.create(
        model="sim/default",
        messages=[
            {"role": "system", "content": "Reason in steps."},
            {"role": "user", "content": f"I am a nurse.\n\n{QUESTION}"},
        ],
        seed=11,
    )
    expected = simulate(QUESTION, "I am a nurse.", preset="default", sample_index=0, seed=11)
    assert resp.model == "sim/default"
    assert resp.choices[0].message.content == expected.text
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None
    assert resp.usage.completion_tokens == len(expected.text.split())
    assert resp.usage.prompt_tokens == 3 + 4 + len(QUESTION.split())  # words


def test_bare_preset_name_and_model_list(sim_url: str) -> None:
    client = openai.OpenAI(base_url=sim_url, api_key=KEY, max_retries=0)
    resp = client.chat.completions.create(
        model="null", messages=[{"role": "user", "content": QUESTION}]
    )
    assert resp.model == "sim/null"
    listed = [m.id for m in client.models.list().data]
    assert listed == [f"sim/{name}" for name in sorted(all_presets())]
    assert {"sim/default", "sim/null", "sim/strong"} <= set(listed)


def test_max_tokens_truncates_with_finish_reason_length(sim_url: str) -> None:
    client = openai.OpenAI(base_url=sim_url, api_key=KEY, max_retries=0)
    resp = client.chat.completions.create(
        model="sim/default", max_tokens=5, seed=1, messages=[{"role": "user", "content": QUESTION}]
    )
    assert resp.choices[0].finish_reason == "length"
    assert len((resp.choices[0].message.content or "").split()) == 5


def test_wrong_key_is_a_401_in_openai_format(sim_url: str) -> None:
    client = openai.OpenAI(base_url=sim_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.models.list()
    r = httpx.post(f"{sim_url}/chat/completions", json={"model": "sim/default"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"


def test_unknown_model_is_a_404(sim_url: str) -> None:
    client = openai.OpenAI(base_url=sim_url, api_key=KEY, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="sim/huge", messages=[{"role": "user", "content": "x"}]
        )


def test_batch_runner_against_the_served_simulator(
    sim_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIM_BASE_URL", sim_url)
    monkeypatch.setenv("SIM_API_KEY", KEY)
    msgs = (ChatMessage("user", f"I use a wheelchair.\n\n{QUESTION}"),)
    reqs = [ChatRequest(msgs, SamplingParams(seed=3), sample_index=k) for k in range(4)]
    results = run_chat_batch(ModelSpec.parse("openai-api/sim/sim/default"), reqs, concurrency=4)
    assert all(r.error is None and r.simulated for r in results)
    assert len({r.text for r in results}) > 1  # samples differ through their seeds
    monkeypatch.setenv("SIM_API_KEY", "wrong")
    with pytest.raises(ServiceError, match=r"rejected the API key \(401\); check SIM_API_KEY\."):
        run_chat_batch(ModelSpec.parse("openai-api/sim/sim/default"), reqs)


def test_server_without_key_accepts_anyone() -> None:
    with SimServer() as url:
        client = openai.OpenAI(base_url=url, api_key="anything", max_retries=0)
        assert client.models.list().data
        assert url.startswith("http://127.0.0.1:")


def test_embeddings_through_the_openai_client(sim_url: str) -> None:
    from llm.sim.embeddings import hashed_embedding

    client = openai.OpenAI(base_url=sim_url, api_key=KEY, max_retries=0)
    resp = client.embeddings.create(
        model="sim-embedding", input=["coffee every day", "herbal tea only"], dimensions=64
    )
    vecs = [d.embedding for d in resp.data]
    assert [len(v) for v in vecs] == [64, 64]
    assert vecs[0] == pytest.approx(hashed_embedding("coffee every day", 64))
    same = client.embeddings.create(model="sim-embedding", input="Coffee every day!", dimensions=64)
    assert same.data[0].embedding == pytest.approx(vecs[0])  # case and punctuation ignored
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="sim-embedding", input=[1, 2], dimensions=64)
