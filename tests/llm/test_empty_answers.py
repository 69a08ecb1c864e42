"""``content: null`` and empty ``choices`` are failed requests: retried, never cached."""

from __future__ import annotations

import random

from sqlmodel import Session, select

from llm.batch import run_chat_batch
from llm.openai_backend import OpenAIBackend
from llm.retry import RetryPolicy
from llm.types import ChatMessage, ChatRequest, SamplingParams
from storage.models import LLMCacheEntry
from tests.llm.chaos_server import ChaosServer


def _backend(url: str, attempts: int) -> OpenAIBackend:
    return OpenAIBackend(
        "openai-api/chaos/chaos-model",
        base_url=url,
        api_key="test-key",
        model="chaos-model",
        retry=RetryPolicy(max_attempts=attempts, base_delay_s=0.0, max_delay_s=0.0),
        rng=random.Random(0),
    )


def _req(text: str) -> ChatRequest:
    return ChatRequest((ChatMessage("user", text),), SamplingParams(seed=1))


def test_null_content_and_no_choices_are_retried_then_answered(
    chaos: ChaosServer, session: Session
) -> None:
    b = _backend(chaos.url, attempts=4)
    null, nochoices = run_chat_batch(b, [_req("nullx2"), _req("nochoicesx1")], session=session)
    assert null.error is None and null.attempts == 3 and null.text
    assert nochoices.error is None and nochoices.attempts == 2
    assert chaos.stats.by_message == {"nullx2": 3, "nochoicesx1": 2}


def test_null_content_that_persists_fails_and_is_not_cached(
    chaos: ChaosServer, session: Session
) -> None:
    b = _backend(chaos.url, attempts=2)
    [res] = run_chat_batch(b, [_req("nullx99")], session=session)
    assert res.text is None and res.error_kind == "bad_response"
    assert res.error == "The model endpoint sent a completion with no content (content: null)."
    assert session.exec(select(LLMCacheEntry)).all() == []
    # A rerun asks again (nothing was cached as an answer).
    run_chat_batch(b, [_req("nullx99")], session=session)
    assert chaos.stats.by_message["nullx99"] == 4
