"""The OpenAI-compatible backend against a real (chaos) HTTP server: retries, limits, errors."""

from __future__ import annotations

import asyncio
import random
import socket
from typing import Any

import pytest

from llm.batch import run_chat_batch
from llm.openai_backend import OpenAIBackend
from llm.retry import RetryPolicy
from llm.types import ChatMessage, ChatRequest, ChatResult, SamplingParams
from storage.errors import ServiceError
from tests.llm.chaos_server import ChaosServer

FAST = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05)


def req(text: str, **kw: Any) -> ChatRequest:
    return ChatRequest(
        messages=(ChatMessage("system", "Reason in steps."), ChatMessage("user", text)), **kw
    )


def backend(
    url: str,
    *,
    key: str = "test-key",
    model: str = "chaos-model",
    retry: RetryPolicy = FAST,
    timeout_s: float = 10.0,
    **kw: Any,
) -> OpenAIBackend:
    return OpenAIBackend(
        "openai-api/chaos/" + model,
        base_url=url,
        api_key=key,
        model=model,
        retry=retry,
        timeout_s=timeout_s,
        rng=random.Random(0),
        key_env="CHAOS_API_KEY",
        **kw,
    )


def chat(b: OpenAIBackend, requests: list[ChatRequest], concurrency: int = 8) -> list[ChatResult]:
    return asyncio.run(b.achat(requests, concurrency=concurrency))


def test_good_request_records_usage_latency_and_one_attempt(chaos: ChaosServer) -> None:
    [res] = chat(backend(chaos.url), [req("ok 1")])
    assert res.error is None and res.text and res.text.startswith("<think>")
    assert (res.prompt_tokens, res.completion_tokens, res.attempts) == (7, 11, 1)
    assert res.latency_ms > 0 and res.finish_reason == "stop" and res.model == "chaos-model"
    assert chaos.stats.requests == 1


def test_429_and_500_are_retried_and_counted(chaos: ChaosServer) -> None:
    b = backend(chaos.url)
    r429, r500 = chat(b, [req("429x2:ra=0"), req("500x3")])
    assert r429.error is None and r429.attempts == 3
    assert r500.error is None and r500.attempts == 4
    assert chaos.stats.by_message == {"429x2:ra=0": 3, "500x3": 4}
    assert b.stats.retries == 5 and b.stats.attempts == 7


def test_retries_stop_at_max_attempts_with_a_clear_error(chaos: ChaosServer) -> None:
    [res] = chat(backend(chaos.url), [req("500x99")])
    assert res.text is None and res.attempts == FAST.max_attempts
    assert res.error_kind == "server"
    assert res.error == f"Model endpoint {chaos.url} answered 500: The server had an error."
    assert chaos.stats.by_message["500x99"] == FAST.max_attempts


def test_client_library_retries_are_disabled(chaos: ChaosServer) -> None:
    # With max_attempts=1 exactly one HTTP request may reach the server.
    [res] = chat(backend(chaos.url, retry=RetryPolicy(max_attempts=1)), [req("500x5")])
    assert res.error_kind == "server" and res.attempts == 1
    assert chaos.stats.requests == 1


def test_retry_after_seconds_is_honoured(chaos: ChaosServer) -> None:
    [res] = chat(backend(chaos.url), [req("429x1:ra=1")])
    first, second = chaos.stats.times["429x1:ra=1"]
    assert res.error is None and res.attempts == 2
    assert second - first >= 1.0  # jitter alone would wait at most 0.01 s


def test_retry_after_http_date_is_honoured(chaos: ChaosServer) -> None:
    [res] = chat(backend(chaos.url), [req("429date x1:ra=2")])
    first, second = chaos.stats.times["429date x1:ra=2"]
    assert res.error is None and res.attempts == 2
    # HTTP-dates have one-second resolution: "2 s ahead" is at least 1 s ahead.
    assert second - first >= 1.0


def test_retry_after_longer_than_allowed_gives_up(chaos: ChaosServer) -> None:
    policy = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_retry_after_s=0.5)
    [res] = chat(backend(chaos.url, retry=policy), [req("429x1:ra=30")])
    assert res.error_kind == "rate_limit" and res.attempts == 1


def test_timeout_is_retried(chaos: ChaosServer) -> None:
    b = backend(chaos.url, timeout_s=1.5)
    [res] = chat(b, [req("slowx1")])
    assert res.error is None and res.attempts == 2
    assert b.stats.retries == 1


def test_unreadable_body_is_retried(chaos: ChaosServer) -> None:
    [res] = chat(backend(chaos.url), [req("garbagex1")])
    assert res.error is None and res.attempts == 2


def test_bad_request_is_not_retried_and_stays_per_request(chaos: ChaosServer) -> None:
    results = run_chat_batch(backend(chaos.url), [req("badreq"), req("ok 2")], concurrency=2)
    bad, good = results
    assert bad.error_kind == "bad_request" and bad.attempts == 1
    assert "rejected the request (400): max_tokens is too large" in (bad.error or "")
    assert good.error is None


@pytest.mark.parametrize("limit", [5, 20])
def test_concurrency_bound_is_respected(chaos: ChaosServer, limit: int) -> None:
    requests = [req(f"ok {i}") for i in range(4 * limit)]
    results = chat(backend(chaos.url), requests, concurrency=limit)
    assert all(r.error is None for r in results)
    assert chaos.stats.requests == 4 * limit
    assert chaos.stats.max_in_flight <= limit
    assert chaos.stats.max_in_flight >= limit // 2  # the bound is reached, not serialised


def test_results_come_back_in_request_order_with_callbacks(chaos: ChaosServer) -> None:
    seen: list[int] = []
    requests = [req("500x1") if i == 0 else req(f"ok order {i}") for i in range(6)]
    results = asyncio.run(
        backend(chaos.url).achat(
            requests, concurrency=6, on_result=lambda i, r, res: seen.append(i)
        )
    )
    assert sorted(seen) == list(range(6))
    assert seen[-1] == 0  # the retried request finished last ...
    assert results[0].attempts == 2  # ... but is still first in the returned list


def test_wrong_key_raises_one_clear_error_and_stops_sending(chaos: ChaosServer) -> None:
    secret = "sk-wrong-secret-123456"
    requests = [req(f"ok key {i}") for i in range(30)]
    with pytest.raises(ServiceError) as err:
        run_chat_batch(backend(chaos.url, key=secret), requests, concurrency=4)
    msg = str(err.value)
    assert msg == (f"Model endpoint {chaos.url} rejected the API key (401); check CHAOS_API_KEY.")
    assert secret not in msg
    assert chaos.stats.requests <= 4  # the rest were never sent


def test_unknown_model_raises_one_clear_error(chaos: ChaosServer) -> None:
    with pytest.raises(ServiceError, match=r"does not serve model 'gpt-nope' \(404\)"):
        run_chat_batch(backend(chaos.url, model="gpt-nope"), [req("ok m")] * 3)


def test_wrong_path_is_reported_as_a_url_problem(chaos: ChaosServer) -> None:
    base = chaos.url.removesuffix("/v1")  # forgot the /v1
    with pytest.raises(ServiceError, match=r"has no /chat/completions route \(404\)"):
        run_chat_batch(backend(base), [req("ok p")])


def test_unreachable_url_raises_one_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    b = backend(url)
    with pytest.raises(ServiceError) as err:
        run_chat_batch(b, [req("ok u1"), req("ok u2")])
    assert str(err.value) == f"Model endpoint {url} is unreachable (connection refused)."
    # bounded by the retry policy (counted, not timed: a loaded machine must not fail it)
    assert 1 <= b.stats.attempts <= 2 * FAST.max_attempts


def test_unresolvable_host_is_not_retried() -> None:
    b = backend("http://no-such-host.invalid/v1")
    with pytest.raises(ServiceError, match="could not be resolved"):
        run_chat_batch(b, [req("ok d")])
    assert b.stats.attempts == 1


def test_vllm_extras_and_seed_are_sent(chaos: ChaosServer) -> None:
    sp = SamplingParams(seed=42, top_k=50, repetition_penalty=1.05, max_tokens=300)
    chat(backend(chaos.url), [req("ok s0", sampling=sp), req("ok s1", sampling=sp, sample_index=1)])
    bodies = {b["messages"][-1]["content"]: b for b in chaos.stats.bodies}
    b0, b1 = bodies["ok s0"], bodies["ok s1"]
    assert b0["top_k"] == 50 and b0["repetition_penalty"] == 1.05
    assert b0["seed"] == 42 and b1["seed"] != 42
    assert b0["max_tokens"] == 300 and b0["temperature"] == 0.7 and b0["top_p"] == 0.98
    assert chaos.stats.auth_headers[0] == "Bearer test-key"


def test_plain_openai_gets_no_vllm_extras(chaos: ChaosServer) -> None:
    b = backend(chaos.url, vllm_extras=False, max_completion_tokens=True)
    chat(b, [req("ok plain", sampling=SamplingParams())])
    [body] = chaos.stats.bodies
    assert "top_k" not in body and "repetition_penalty" not in body and "seed" not in body
    assert body["max_completion_tokens"] == 2048 and "max_tokens" not in body


def test_malformed_text_is_returned_not_treated_as_an_error(chaos: ChaosServer) -> None:
    [res] = chat(backend(chaos.url), [req("malformed")])
    assert res.error is None and res.text and "<think>" not in res.text


def test_backend_repr_hides_the_key(chaos: ChaosServer) -> None:
    assert "test-key" not in repr(backend(chaos.url))


def test_keys_in_url_user_info_never_reach_the_error_text(chaos: ChaosServer) -> None:
    import base64

    url = chaos.url.replace("http://", "http://user:sk-userinfo@")
    b = backend(url)
    [res] = chat(b, [req("500x99")])
    encoded = base64.b64encode(b"user:sk-userinfo").decode()
    assert res.error and "sk-userinfo" not in res.error and encoded not in res.error
    # The same holds for whatever a client library or proxy might echo back.
    echoed = b._redact(f"proxy: Authorization: Basic {encoded} for {url}?api_key=sk-q test-key")
    for secret in ("sk-userinfo", encoded, "sk-q", "test-key"):
        assert secret not in echoed, echoed
