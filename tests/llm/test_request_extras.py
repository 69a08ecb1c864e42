"""Request extras end to end: cache keys, the JSON sent, and the simulator honouring them.

Everything goes over real HTTP through the real ``openai`` client: the chaos server
records the bodies it receives; the simulator server answers with seeded logprobs,
prefill continuation, stop sequences and the thinking switch.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from sqlmodel import Session

from llm.batch import run_chat_batch
from llm.cache import CacheScope, cache_key, request_payload
from llm.logprobs import answer_position, choice_distribution
from llm.openai_backend import OpenAIBackend
from llm.retry import RetryPolicy
from llm.seeds import request_seed
from llm.sim.backend import SimBackend
from llm.sim.server import SimServer
from llm.types import ChatMessage, ChatRequest, SamplingParams
from llm.vllm_backend import vllm_request_kwargs
from tests.llm.chaos_server import ChaosServer

KEY = "sim-test-key"
SCOPE = CacheScope("openai-api", "http://127.0.0.1:1/v1", "m")
QUESTION = "Should I take the stable job or start my own business?"
MSGS = (ChatMessage("system", "Reason in steps."), ChatMessage("user", QUESTION))


def _req(**kw: Any) -> ChatRequest:
    return ChatRequest(MSGS, SamplingParams(seed=5), **kw)


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with SimServer(api_key=KEY) as url:
        yield url


def _sim_backend(url: str, spec: str = "openai-api/sim/sim/default") -> OpenAIBackend:
    return OpenAIBackend(
        spec,
        base_url=url,
        api_key=KEY,
        model="sim/default",
        retry=RetryPolicy(max_attempts=1),
        rng=random.Random(0),
    )


EXTRAS: list[dict[str, Any]] = [
    {"logprobs": True},
    {"logprobs": False},
    {"top_logprobs": 5},
    {"chat_template_kwargs": {"enable_thinking": False}},
    {"continue_final_message": True},
    {"add_generation_prompt": False},
    {"stop": ("</think>",)},
    {"attempt": 1},
    {"thinking_token_budget": 256},
]


@pytest.mark.parametrize("extra", EXTRAS, ids=[next(iter(e)) for e in EXTRAS])
def test_each_extra_enters_the_cache_key_only_when_set(extra: dict[str, Any]) -> None:
    plain = _req()
    assert "extras" not in request_payload(SCOPE, plain)
    with_extra = _req(**extra)
    payload = request_payload(SCOPE, with_extra)
    assert payload["extras"] == {
        k: (list(v) if isinstance(v, tuple) else v) for k, v in extra.items()
    }
    assert cache_key(SCOPE, with_extra) != cache_key(SCOPE, plain)


def test_attempts_are_distinct_requests_with_distinct_seeds() -> None:
    keys = {cache_key(SCOPE, _req(attempt=a)) for a in (1, 2, 3)}
    seeds = {request_seed(_req(attempt=a)) for a in (1, 2, 3)}
    assert len(keys) == 3 and len(seeds) == 3
    assert request_seed(_req()) == 5  # no attempt: the seed of today's requests


def test_openai_compatible_body_carries_the_extras(chaos: ChaosServer) -> None:
    request = ChatRequest(
        (*MSGS, ChatMessage("assistant", "<think>")),
        SamplingParams(seed=5),
        logprobs=True,
        top_logprobs=3,
        stop=("</answer>",),
        chat_template_kwargs={"enable_thinking": False},
        continue_final_message=True,
        add_generation_prompt=False,
        attempt=2,
        thinking_token_budget=64,
    )
    compat = OpenAIBackend(
        "openai-api/chaos/chaos-model", base_url=chaos.url, api_key="test-key", model="chaos-model"
    )
    official = OpenAIBackend(
        "openai/chaos-model",
        base_url=chaos.url,
        api_key="test-key",
        model="chaos-model",
        vllm_extras=False,
        max_completion_tokens=True,
    )
    for b in (compat, official):
        [res] = asyncio.run(b.achat([request], concurrency=1))
        assert res.error is None
    sent_compat, sent_official = chaos.stats.bodies
    assert sent_compat["logprobs"] is True and sent_compat["top_logprobs"] == 3
    assert sent_compat["stop"] == ["</answer>"]
    assert sent_compat["chat_template_kwargs"] == {"enable_thinking": False}
    assert sent_compat["continue_final_message"] is True
    assert sent_compat["add_generation_prompt"] is False
    assert sent_compat["thinking_token_budget"] == 64  # vLLM's server-side budget
    assert sent_compat["seed"] == request_seed(request) != 5
    assert "attempt" not in sent_compat  # a cache-key and seed matter, not a parameter
    # The OpenAI API has no chat template: its switches are not sent there.
    assert sent_official["logprobs"] is True and sent_official["stop"] == ["</answer>"]
    for name in (
        "chat_template_kwargs", "continue_final_message", "add_generation_prompt",
        "thinking_token_budget",
    ):  # fmt: skip
        assert name not in sent_official
    # A request without extras sends exactly what it sent before they existed.
    chaos.reset()
    asyncio.run(compat.achat([_req()], concurrency=1))
    assert set(chaos.stats.bodies[0]) == {
        "model", "messages", "temperature", "top_p", "max_tokens", "seed", "top_k",
        "repetition_penalty",
    }  # fmt: skip


def test_logprobs_over_http_match_the_text_and_survive_the_cache(
    sim_url: str, session: Session
) -> None:
    request = _req(logprobs=True, top_logprobs=4)
    b = _sim_backend(sim_url)
    [first] = run_chat_batch(b, [request], session=session)
    assert first.error is None and first.text and first.logprobs is not None
    assert "".join(t.token for t in first.logprobs) == first.text
    assert all(t.top[0] == (t.token, t.logprob) and len(t.top) == 4 for t in first.logprobs)
    [again] = run_chat_batch(b, [request], session=session)
    assert again.cached and again.logprobs == first.logprobs
    # Without the extra: no logprobs, and a different cache entry.
    [plain] = run_chat_batch(b, [_req()], session=session)
    assert not plain.cached and plain.logprobs is None and plain.text == first.text
    # The in-process simulator answers the same request identically.
    [local] = asyncio.run(SimBackend("default").achat([request], concurrency=1))
    assert (local.text, local.logprobs) == (first.text, first.logprobs)


def test_prefill_continuation_thinking_switch_and_stop_on_the_simulator(sim_url: str) -> None:
    b = _sim_backend(sim_url)
    [full] = asyncio.run(b.achat([_req()], concurrency=1))
    assert full.text is not None and full.text.startswith("<think>")
    prefix = full.text[:25]
    cont = ChatRequest(
        (*MSGS, ChatMessage("assistant", prefix)),
        SamplingParams(seed=5),
        continue_final_message=True,
        add_generation_prompt=False,
        logprobs=True,
    )
    no_think = _req(chat_template_kwargs={"enable_thinking": False})
    stopped = _req(stop=("</think>",))
    r_cont, r_nothink, r_stop = asyncio.run(b.achat([cont, no_think, stopped], concurrency=3))
    assert r_cont.text == full.text[25:]
    assert r_cont.logprobs is not None and "".join(t.token for t in r_cont.logprobs) == r_cont.text
    assert r_nothink.text is not None and "<think>" not in r_nothink.text
    assert r_nothink.text == full.text[full.text.index("</think>") + len("</think>") :]
    assert r_stop.text == full.text[: full.text.index("</think>")]
    assert r_stop.finish_reason == "stop"


def test_simulator_letter_answer_gives_a_distribution_over_choices(sim_url: str) -> None:
    # An assistant prefill that ends just before the answer: the continuation's first
    # token is what the model "chose", and its top-k spreads over the other letters.
    client = openai.OpenAI(base_url=sim_url, api_key=KEY, max_retries=0)
    resp = client.chat.completions.create(
        model="sim/default",
        seed=1,
        messages=[{"role": "user", "content": QUESTION}],
        logprobs=True,
        top_logprobs=5,
    )
    content = resp.choices[0].logprobs
    assert content is not None and content.content
    assert "".join(t.token for t in content.content) == resp.choices[0].message.content
    from llm.sim.extras import sim_logprobs

    toks = sim_logprobs("Answer: C", seed=9, top_k=5)
    pos = answer_position(toks, after="Answer:", choices="ABCD")
    assert pos is not None and pos.token == " C"
    dist = choice_distribution(pos.top, "ABCD")
    assert dist.found and abs(sum(dist.probs.values()) - 1) < 1e-6
    assert max(dist.probs, key=dist.probs.__getitem__) == "C"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"continue_final_message": True}, "last message"),
        ({"top_logprobs": 3}, "needs 'logprobs'"),
        ({"logprobs": True, "top_logprobs": 99}, "from 0 to 20"),
        ({"stop": 3}, "'stop'"),
        (
            {"continue_final_message": True, "add_generation_prompt": True},
            "cannot both",
        ),
    ],
)
def test_simulator_refuses_what_vllm_refuses(
    sim_url: str, body: dict[str, Any], message: str
) -> None:
    client = openai.OpenAI(base_url=sim_url, api_key=KEY, max_retries=0)
    with pytest.raises(openai.BadRequestError, match=message):
        client.chat.completions.create(
            model="sim/default",
            messages=[{"role": "user", "content": QUESTION}],
            extra_body=body,
        )


def test_vllm_request_kwargs_maps_the_extras() -> None:
    plain_sampling, plain_chat = vllm_request_kwargs(_req())
    assert plain_chat == {} and "logprobs" not in plain_sampling and "stop" not in plain_sampling
    assert "thinking_token_budget" not in plain_sampling
    assert plain_sampling["seed"] == 5
    sampling, chat = vllm_request_kwargs(
        _req(
            logprobs=True,
            stop=("</answer>",),
            chat_template_kwargs={"enable_thinking": False},
            continue_final_message=True,
            add_generation_prompt=False,
            attempt=3,
            thinking_token_budget=128,
        )
    )
    assert sampling["logprobs"] == 0 and sampling["stop"] == ["</answer>"]
    assert sampling["thinking_token_budget"] == 128 and "thinking_token_budget" not in chat
    assert sampling["seed"] == request_seed(_req(attempt=3)) != 5
    assert chat == {
        "chat_template_kwargs": {"enable_thinking": False},
        "continue_final_message": True,
        "add_generation_prompt": False,
    }
    assert vllm_request_kwargs(_req(top_logprobs=7))[0]["logprobs"] == 7
