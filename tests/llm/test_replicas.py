"""Several replicas behind one name: least-in-flight routing, refusing replicas skipped.

Real servers over real HTTP: chaos servers of different speeds show the routing; two
simulator servers, one stopped mid-run, show a run that finishes while a replica is down;
a replica that comes back on its port is used again.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time

from llm.backends import get_backend
from llm.batch import run_chat_batch
from llm.openai_backend import OpenAIBackend
from llm.retry import RetryPolicy
from llm.sim.server import SimServer
from llm.specs import ModelSpec
from llm.types import ChatMessage, ChatRequest, ChatResult, SamplingParams
from tests.llm.chaos_server import ChaosServer


def _requests(n: int, prefix: str = "ok") -> list[ChatRequest]:
    return [
        ChatRequest(
            (ChatMessage("user", f"{prefix} Should I move, case {i}?"),), SamplingParams(seed=i)
        )
        for i in range(n)
    ]


def _backend(urls: list[str], model: str, key: str, **kw: object) -> OpenAIBackend:
    return OpenAIBackend(
        "openai-api/pool/" + model,
        base_url=",".join(urls),
        api_key=key,
        model=model,
        retry=RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05),
        rng=random.Random(0),
        **kw,  # type: ignore[arg-type]
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_comma_separated_base_url_makes_one_backend_with_a_stable_endpoint() -> None:
    env = {
        "POOL_BASE_URL": "http://127.0.0.1:9002/v1/, http://127.0.0.1:9001/v1",
        "POOL_API_KEY": "k",
    }
    b = get_backend(ModelSpec.parse("openai-api/pool/m"), env=env)
    assert b.endpoint() == "http://127.0.0.1:9001/v1,http://127.0.0.1:9002/v1"
    swapped = {**env, "POOL_BASE_URL": "http://127.0.0.1:9001/v1,http://127.0.0.1:9002/v1"}
    assert get_backend(ModelSpec.parse("openai-api/pool/m"), env=swapped).endpoint() == b.endpoint()
    single = {**env, "POOL_BASE_URL": "http://127.0.0.1:9001/v1/"}
    assert (
        get_backend(ModelSpec.parse("openai-api/pool/m"), env=single).endpoint()
        == "http://127.0.0.1:9001/v1"
    )


def test_requests_go_to_the_replica_with_fewest_in_flight() -> None:
    # Round robin would split 50/50; least-in-flight sends most to the fast replica.
    slow, fast = ChaosServer(ok_delay_s=0.25), ChaosServer(ok_delay_s=0.0)
    with slow as slow_url, fast as fast_url:
        b = _backend([slow_url, fast_url], "chaos-model", "test-key")
        results = asyncio.run(b.achat(_requests(40), concurrency=4))
    assert all(r.error is None for r in results)
    assert slow.stats.requests + fast.stats.requests == 40
    assert fast.stats.requests > 3 * slow.stats.requests >= 3
    assert max(slow.stats.max_in_flight, fast.stats.max_in_flight) <= 4


def test_run_finishes_while_one_replica_is_down_and_a_returning_one_is_used_again() -> None:
    key = "sim-key"
    port_b = _free_port()
    a = SimServer(api_key=key)
    b = SimServer(api_key=key, port=port_b)
    url_a, url_b = a.start(), b.start()
    try:
        backend = _backend([url_a, url_b], "sim/default", key, replica_retry_s=0.2)
        done: list[ChatResult] = []

        def on_result(_i: int, _req: ChatRequest, res: ChatResult) -> None:
            done.append(res)
            if len(done) == 20:
                b.stop()  # replica B goes away mid-run: its port now refuses connections

        results = run_chat_batch(backend, _requests(120), concurrency=4, on_result=on_result)
        assert all(r.error is None and r.text for r in results)
        before = dict(backend.stats.by_replica)
        assert before.get(url_b, 0) >= 1 and before[url_a] > before.get(url_b, 0)
        assert backend.stats.replica_skips >= 1  # B refused, requests went to A at once
        # B comes back on the same port: after its down period it gets requests again.
        b2 = SimServer(api_key=key, port=port_b)
        b2.start()
        try:
            time.sleep(0.5)
            run_chat_batch(backend, _requests(40, "again"), concurrency=4)
            assert backend.stats.by_replica.get(url_b, 0) > before.get(url_b, 0)
        finally:
            b2.stop()
    finally:
        a.stop()
        b.stop()
