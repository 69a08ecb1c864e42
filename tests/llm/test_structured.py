"""Structured outputs (issue 36): the request field, its cache key, how it is sent, fallbacks.

The endpoint side runs against the simulator's HTTP server in its three behaviours: it
honours a format, refuses it with a 400 (a server without structured outputs), or accepts
it and answers free text (a server that claims support).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from dataclasses import replace

import pytest

from llm.cache import CacheScope, cache_key, request_payload
from llm.openai_backend import OpenAIBackend
from llm.retry import RetryPolicy
from llm.sim.server import SimServer
from llm.sim.structured import conform_text
from llm.structured import (
    FLAG_FALLBACK,
    FLAG_IGNORED,
    STRUCTURED_ENV,
    SUPPORT,
    ResponseFormat,
    choice_format,
    object_schema,
    structured_mode,
    use_structured,
    with_format,
)
from llm.types import ChatMessage, ChatRequest, ChatResult
from storage.errors import ConfigError

KEY = "structured-key"
VERDICT = object_schema("verdict", {"score": {"type": "integer", "enum": [0, 1, 2]}})
LETTER = choice_format("letter", ["A", "B", "C", "D"])
DIGIT = ResponseFormat("regex", "digit", pattern="[0-4]")
SCOPE = CacheScope("openai-api", "http://127.0.0.1:8000/v1", "m")


def _req(text: str = "Which option? Answer with a letter.") -> ChatRequest:
    return ChatRequest(messages=(ChatMessage("user", text),))


def _backend(url: str, *, vllm_extras: bool = True) -> OpenAIBackend:
    return OpenAIBackend(
        "openai-api/sim/default",
        base_url=url,
        api_key=KEY,
        model="default",
        vllm_extras=vllm_extras,
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02),
        rng=random.Random(0),
    )


def _chat(backend: OpenAIBackend, requests: list[ChatRequest]) -> list[ChatResult]:
    return asyncio.run(backend.achat(requests, concurrency=2))


def test_cache_key_is_unchanged_without_a_format_and_differs_with_one() -> None:
    plain = _req()
    assert "extras" not in request_payload(SCOPE, plain)
    with use_structured("off"):
        assert with_format(plain, LETTER) is plain  # mode off: today's request and key
    with use_structured("auto"):
        auto = with_format(plain, LETTER)
        verdict = with_format(plain, VERDICT)
    with use_structured("on"):
        on = with_format(plain, LETTER)
    keys = {cache_key(SCOPE, r) for r in (plain, auto, on, verdict)}
    assert len(keys) == 4  # the format and the mode are both part of the key
    extras = request_payload(SCOPE, auto)["extras"]
    assert extras == {"response_format": LETTER.to_json(), "structured": "auto"}


def test_mode_comes_from_the_context_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(STRUCTURED_ENV, "on")
    assert structured_mode() == "on"
    with use_structured("off"):
        assert structured_mode() == "off"
    monkeypatch.setenv(STRUCTURED_ENV, "sometimes")
    with pytest.raises(ConfigError, match="DRIFTLENS_STRUCTURED must be auto, on or off"):
        structured_mode()
    monkeypatch.delenv(STRUCTURED_ENV)
    assert structured_mode() == "auto"


def test_body_asks_for_the_format_the_way_the_endpoint_takes_it() -> None:
    vllm = _backend("http://127.0.0.1:1/v1")
    openai = _backend("http://127.0.0.1:1/v1", vllm_extras=False)
    with use_structured("auto"):
        verdict, letter, digit = (with_format(_req(), f) for f in (VERDICT, LETTER, DIGIT))
    for b in (vllm, openai):
        sent = b.request_body(verdict)["response_format"]
        assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
        assert sent["json_schema"]["schema"] == dict(VERDICT.schema or {})
    assert vllm.request_body(letter)["structured_outputs"] == {"choice": ["A", "B", "C", "D"]}
    assert vllm.request_body(digit)["structured_outputs"] == {"regex": "[0-4]"}
    # The OpenAI API has no choice/regex constraint: nothing is sent for them.
    assert "structured_outputs" not in openai.request_body(letter)
    assert "response_format" not in openai.request_body(letter)
    assert "response_format" not in vllm.request_body(verdict, send_format=False)


def test_served_simulator_honours_schema_choice_and_regex() -> None:
    prompt = (
        "[driftlens-task:none]\nGive a score from 0 to 2 as JSON like "
        '<answer>{"score": 1}</answer>.'
    )
    with SimServer(api_key=KEY) as url, use_structured("auto"):
        b = _backend(url)
        reqs = [with_format(_req(), LETTER), with_format(_req(), DIGIT)]
        results = _chat(b, reqs)
    for fmt, res in zip((LETTER, DIGIT), results, strict=True):
        assert res.error is None and fmt.accepts(res.text), res.text
        assert res.output_flags == ()
    assert SUPPORT.get(b.endpoint()).honoured == 2
    assert conform_text(prompt, VERDICT) == '{"score":1}'


def test_refused_format_falls_back_once_per_endpoint_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with SimServer(api_key=KEY, structured="reject") as url, use_structured("auto"):
        b = _backend(url)
        with caplog.at_level(logging.WARNING, logger="driftlens.structured"):
            first = _chat(b, [with_format(_req(), LETTER)])
            second = _chat(b, [with_format(_req("Another one?"), LETTER)])
    for res in (*first, *second):
        assert res.error is None and res.text  # nothing lost: answered without the format
        assert res.output_flags == (FLAG_FALLBACK,)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert b.endpoint() in warnings[0] and "400" in warnings[0]
    assert "prompt-and-repair" in warnings[0]
    # the second request went without the format at once: one attempt, no 400 first
    assert second[0].attempts == 1 and first[0].attempts == 2


def test_refused_format_in_mode_on_is_a_one_line_error() -> None:
    with SimServer(api_key=KEY, structured="reject") as url, use_structured("on"):
        [res] = _chat(_backend(url), [with_format(_req(), LETTER)])
    assert res.text is None and res.error_kind == "bad_request"
    assert res.error is not None and "\n" not in res.error
    assert "400" in res.error and "--structured on allows no fallback" in res.error
    # mode on, OpenAI API, choice format: refused before anything is sent
    with use_structured("on"):
        [res] = _chat(
            _backend("http://127.0.0.1:9/v1", vllm_extras=False), [with_format(_req(), LETTER)]
        )
    assert res.attempts == 0 and res.error and "has no form of a choice format" in res.error


def test_endpoint_that_ignores_the_format_is_flagged_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with SimServer(api_key=KEY, structured="ignore") as url, use_structured("auto"):
        b = _backend(url)
        with caplog.at_level(logging.WARNING, logger="driftlens.structured"):
            results = _chat(b, [with_format(_req(f"Question {i}?"), VERDICT) for i in range(3)])
    assert all(r.error is None and r.text for r in results)
    assert all(r.output_flags == (FLAG_IGNORED,) for r in results)
    assert SUPPORT.get(b.endpoint()).ignored == 3
    [warning] = [r.getMessage() for r in caplog.records]
    assert b.endpoint() in warning and "does not follow it" in warning


def test_accepts_checks_the_root_and_required_keys() -> None:
    assert VERDICT.accepts('{"score": 1}')
    assert not VERDICT.accepts('{"other": 1}')
    assert not VERDICT.accepts("<answer>{}</answer>")
    assert LETTER.accepts(" B ") and not LETTER.accepts("E")
    assert DIGIT.accepts("3") and not DIGIT.accepts("35")
    with pytest.raises(ValueError, match="needs its choice value"):
        ResponseFormat("choice", "empty", choices=())
    assert json.loads(json.dumps(replace(LETTER, name="x").to_json()))["name"] == "x"
