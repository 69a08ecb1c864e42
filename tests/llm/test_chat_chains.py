"""Chains of requests (a reply may call for a follow-up): pipelined over HTTP, cached, bounded.

Against the chaos server (real HTTP, real ``openai`` client): a follow-up is sent as soon
as the reply it depends on is in, while other first requests are still in flight, under one
concurrency limit for all requests; a rerun is answered from the cache; in-process backends
answer in rounds with the same results.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from sqlmodel import Session

from llm.batch import arun_chat_chains, run_chat_chains
from llm.openai_backend import OpenAIBackend
from llm.retry import RetryPolicy
from llm.sim.backend import SimBackend
from llm.types import ChatMessage, ChatRequest, ChatResult
from storage.errors import ServiceError
from tests.llm.chaos_server import ChaosServer


def req(text: str) -> ChatRequest:
    return ChatRequest(messages=(ChatMessage("system", "Label."), ChatMessage("user", text)))


def backend(url: str, key: str = "test-key") -> OpenAIBackend:
    return OpenAIBackend(
        "openai-api/chaos/chaos-model",
        base_url=url,
        api_key=key,
        model="chaos-model",
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02),
        timeout_s=30.0,
        rng=random.Random(0),
    )


def repair_once(_chain: int, request: ChatRequest, result: ChatResult) -> ChatRequest | None:
    """A follow-up for every first reply that succeeded (like a labeler's repair)."""
    if result.error is not None or len(request.messages) > 2:
        return None
    user = request.messages[-1].content
    return ChatRequest(
        messages=(
            *request.messages,
            ChatMessage("assistant", result.text or ""),
            ChatMessage("user", f"ok repair of {user}"),
        )
    )


def test_follow_ups_go_out_while_a_slow_first_request_is_in_flight(chaos: ChaosServer) -> None:
    # chaos_server: a "slow" answer takes 3 s; the others 0.02 s.
    firsts = [req("slowx1 chain 0")] + [req(f"ok chain {i}") for i in range(1, 4)]
    chains = run_chat_chains(backend(chaos.url), firsts, follow_up=repair_once, concurrency=4)
    assert [len(c) for c in chains] == [2, 2, 2, 2]
    assert all(r.error is None for c in chains for r in c)
    slow_sent = chaos.stats.times["slowx1 chain 0"][0]
    for i in range(1, 4):
        repair_sent = chaos.stats.times[f"ok repair of ok chain {i}"][0]
        # In rounds, every repair would wait for the slow first reply (3 s).
        assert repair_sent < slow_sent + 2.0, (i, repair_sent - slow_sent)
    assert chains[0][1].text is not None and chaos.stats.requests == 8


def test_one_concurrency_limit_for_first_requests_and_follow_ups(chaos: ChaosServer) -> None:
    firsts = [req(f"ok item {i}") for i in range(12)]
    chains = run_chat_chains(backend(chaos.url), firsts, follow_up=repair_once, concurrency=3)
    assert all(len(c) == 2 for c in chains)
    assert chaos.stats.requests == 24 and chaos.stats.max_in_flight <= 3


def test_chains_are_cached_and_a_rerun_sends_nothing(chaos: ChaosServer, session: Session) -> None:
    firsts = [req(f"ok cached {i}") for i in range(5)]
    seen: list[int] = []

    def follow(chain: int, request: ChatRequest, result: ChatResult) -> ChatRequest | None:
        seen.append(chain)
        return repair_once(chain, request, result)

    first = run_chat_chains(backend(chaos.url), firsts, follow_up=follow, session=session)
    assert chaos.stats.requests == 10
    progress: list[tuple[int, int]] = []
    again = run_chat_chains(
        backend(chaos.url),
        firsts,
        follow_up=follow,
        session=session,
        progress=lambda d, t: progress.append((d, t)),
    )
    assert chaos.stats.requests == 10  # nothing sent: both links of every chain are cached
    assert [[r.text for r in c] for c in again] == [[r.text for r in c] for c in first]
    assert all(r.cached for c in again for r in c)
    assert sorted(seen) == sorted(list(range(5)) * 4)  # every result, hits included
    assert progress[-1] == (5, 5)


def test_identical_requests_of_several_chains_are_sent_once(chaos: ChaosServer) -> None:
    firsts = [req("ok same")] * 4
    chains = run_chat_chains(backend(chaos.url), firsts, follow_up=repair_once, concurrency=4)
    assert all(len(c) == 2 for c in chains)
    assert chaos.stats.by_message == {"ok same": 1, "ok repair of ok same": 1}


def test_a_failing_follow_up_callback_raises_instead_of_hanging(chaos: ChaosServer) -> None:
    def broken(chain: int, request: ChatRequest, result: ChatResult) -> ChatRequest | None:
        raise KeyError("bug in the caller")

    with pytest.raises(KeyError, match="bug in the caller"):
        asyncio.run(
            asyncio.wait_for(
                arun_chat_chains(
                    backend(chaos.url), [req(f"ok {i}") for i in range(3)], follow_up=broken
                ),
                timeout=20,
            )
        )


def test_an_endpoint_that_refuses_everything_is_one_service_error(chaos: ChaosServer) -> None:
    with pytest.raises(ServiceError, match="rejected the API key"):
        run_chat_chains(
            backend(chaos.url, key="wrong"),
            [req(f"ok {i}") for i in range(3)],
            follow_up=repair_once,
        )


def test_in_process_backends_answer_chains_in_rounds() -> None:
    firsts = [req(f"Should I move to city {i}?") for i in range(4)]
    sim = SimBackend("default")
    chains = run_chat_chains(sim, firsts, follow_up=repair_once)
    assert [len(c) for c in chains] == [2, 2, 2, 2]
    # The same answers as asking each link directly.
    assert chains[2][0].text == sim.answer(firsts[2]).text
    follow = repair_once(2, firsts[2], chains[2][0])
    assert follow is not None and chains[2][1].text == sim.answer(follow).text


def test_a_stalled_chain_ends_with_a_timeout_after_the_stall_budget(
    chaos: ChaosServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feed path had no stall budget (issue 23 item 17): a stalled endpoint held the call.

    Chain 0's first answer takes 3 s (chaos "slow"); with a 1.5 s budget the call ends
    before it comes, and chain 0 ends with the stall budget's timeout (before the budget
    existed it waited and got the answer and its follow-up). The quick chains normally end
    first with both answers; on a loaded machine their answers may miss the budget too, and
    then end the same way, never hang.
    """
    monkeypatch.setenv("DRIFTLENS_STALL_BUDGET_S", "1.5")
    firsts = [req("slowx1 chain 0")] + [req(f"ok chain {i}") for i in range(1, 4)]
    ended: list[tuple[int, int]] = []
    chains = run_chat_chains(
        backend(chaos.url),
        firsts,
        follow_up=repair_once,
        concurrency=4,
        progress=lambda done, total: ended.append((done, total)),
    )

    def stalled(r: ChatResult) -> bool:
        return r.error_kind == "timeout" and "stall budget" in (r.error or "")

    assert len(chains[0]) == 1 and stalled(chains[0][0]), chains[0]
    for chain in chains[1:]:
        complete = len(chain) == 2 and all(r.error is None for r in chain)
        assert complete or stalled(chain[-1]), chain
    assert ended[-1] == (4, 4)  # every chain ended, the stalled one included
