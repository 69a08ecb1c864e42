"""A misbehaving OpenAI-compatible server for tests (Starlette + uvicorn on 127.0.0.1).

Each request's behaviour is scripted by a directive at the start of the last user
message, so it does not depend on the order in which concurrent requests arrive::

    "ok"                 answer normally
    "429x2:ra=1"         answer 429 (Retry-After: 1) twice, then normally
    "429date x1:ra=2"    ... with Retry-After as an HTTP-date 2 s ahead
    "500x3"              answer 500 three times, then normally
    "slowx1"             sleep ``slow_s`` before answering, once (client times out)
    "garbagex1"          answer 200 with a body that is not JSON, once
    "badreq"             answer 400 every time
    "malformed"          answer 200 with text that breaks the <think>/<answer> format
    "nullx2"             answer 200 with ``content: null`` twice, then normally
    "nochoicesx1"        answer 200 with ``choices: []`` once
    "nul"                answer 200 with text holding NUL characters

Requests must carry ``Authorization: Bearer <api_key>`` (else 401) and name
``model`` (else 404 ``model_not_found``). The server counts requests, attempts per
directive, and the maximum number of requests in flight.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from llm.sim.server import BackgroundServer

_DIRECTIVE = re.compile(
    r"^(?P<kind>[a-z0-9]+?)(?P<date>date)?\s*(?:x(?P<n>\d+))?(?::ra=(?P<ra>[\d.]+))?\b"
)

GOOD_TEXT = "<think><step_1>Compare the options.</step_1></think><answer>Do it.</answer>"


@dataclass
class ChaosStats:
    """What the server saw (read by tests; guarded by a lock)."""

    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    by_message: dict[str, int] = field(default_factory=dict)
    times: dict[str, list[float]] = field(default_factory=dict)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    auth_headers: list[str] = field(default_factory=list)


class ChaosServer(BackgroundServer):
    """``with ChaosServer() as url`` runs the chaos API; ``url`` ends in ``/v1``.

    Args:
        api_key: The only accepted bearer token.
        model: The only model served.
        ok_delay_s: How long a normal answer takes (makes concurrency observable).
        slow_s: How long a ``slow`` answer takes.
    """

    def __init__(
        self,
        *,
        api_key: str = "test-key",
        model: str = "chaos-model",
        ok_delay_s: float = 0.0,
        slow_s: float = 2.0,
    ) -> None:
        self.api_key = api_key
        self.model = model
        self.ok_delay_s = ok_delay_s
        self.slow_s = slow_s
        self.stats = ChaosStats()
        self._lock = threading.Lock()
        super().__init__(self._build(), path="/v1")

    def reset(self) -> None:
        """Forget counters (between tests sharing a server)."""
        with self._lock:
            self.stats = ChaosStats()

    def _build(self) -> Starlette:
        async def chat(request: Request) -> Response:
            with self._lock:
                st = self.stats
                st.requests += 1
                st.in_flight += 1
                st.max_in_flight = max(st.max_in_flight, st.in_flight)
            try:
                return await self._answer(request)
            finally:
                with self._lock:
                    st.in_flight -= 1

        async def models(request: Request) -> Response:
            return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

        return Starlette(
            routes=[
                Route("/v1/chat/completions", chat, methods=["POST"]),
                Route("/v1/models", models, methods=["GET"]),
            ]
        )

    async def _answer(self, request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        body = json.loads(await request.body())
        with self._lock:
            self.stats.auth_headers.append(auth)
            self.stats.bodies.append(body)
        if auth != f"Bearer {self.api_key}":
            return JSONResponse(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {auth[7:]}",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
                status_code=401,
            )
        if body.get("model") != self.model:
            return JSONResponse(
                {
                    "error": {
                        "message": f"The model `{body.get('model')}` does not exist.",
                        "type": "invalid_request_error",
                        "code": "model_not_found",
                    }
                },
                status_code=404,
            )
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        with self._lock:
            seen = self.stats.by_message.get(user, 0)
            self.stats.by_message[user] = seen + 1
            self.stats.times.setdefault(user, []).append(time.monotonic())
        m = _DIRECTIVE.match(user)
        kind = m.group("kind") if m else "ok"
        times = int(m.group("n")) if m and m.group("n") else 1
        failing = seen < times
        if kind == "429" and failing:
            ra = float(m.group("ra") or 1) if m else 1.0
            header = (
                formatdate(time.time() + ra, usegmt=True) if m and m.group("date") else f"{ra:g}"
            )
            return JSONResponse(
                {
                    "error": {
                        "message": "Rate limit reached.",
                        "type": "requests",
                        "code": "rate_limit_exceeded",
                    }
                },
                status_code=429,
                headers={"Retry-After": header},
            )
        if kind == "500" and failing:
            return JSONResponse(
                {
                    "error": {
                        "message": "The server had an error.",
                        "type": "server_error",
                        "code": None,
                    }
                },
                status_code=500,
            )
        if kind == "slow" and failing:
            await asyncio.sleep(self.slow_s)
        if kind == "garbage" and failing:
            return Response(
                "<html>502 Bad Gateway</html>", status_code=200, media_type="application/json"
            )
        if kind == "badreq":
            return JSONResponse(
                {
                    "error": {
                        "message": "max_tokens is too large.",
                        "type": "invalid_request_error",
                        "code": None,
                    }
                },
                status_code=400,
            )
        if self.ok_delay_s:
            await asyncio.sleep(self.ok_delay_s)
        text: str | None = GOOD_TEXT
        if kind == "malformed":
            text = "Sure! Here is my reasoning:\n1. Compare.\n2. Decide."
        elif kind == "nul":
            text = GOOD_TEXT.replace("Compare", "Com\x00pare").replace("Do it", "Do\x00 it")
        elif kind == "null" and failing:
            text = None
        elif kind == "nochoices" and failing:
            return JSONResponse(
                {
                    "id": "chatcmpl-chaos",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": self.model,
                    "choices": [],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 0, "total_tokens": 7},
                }
            )
        return JSONResponse(
            {
                "id": "chatcmpl-chaos",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                        "logprobs": _logprobs(text, body),
                    }
                ],
                "usage": {"prompt_tokens": 7, "completion_tokens": 11, "total_tokens": 18},
            }
        )


def _logprobs(text: str | None, body: dict[str, Any]) -> dict[str, Any] | None:
    """Token logprobs of ``text`` when the request asked for them, as a real engine sends.

    Each whitespace-separated word is one token with ``top_logprobs`` alternatives (the token
    itself first), so a NUL in the text reaches the stored logprobs too. Without them, an
    answer that asked for logprobs would be treated as missing them (and never cached).
    """
    if text is None or not body.get("logprobs"):
        return None
    k = int(body.get("top_logprobs") or 0)
    content = []
    for i, token in enumerate(re.findall(r"\S+\s*", text)):
        top = [{"token": token, "logprob": -0.1, "bytes": None}]
        top += [{"token": f"alt{j}", "logprob": -3.0 - j, "bytes": None} for j in range(1, k)]
        content.append(
            {
                "token": token,
                "logprob": -0.1 - 0.01 * i,
                "bytes": None,
                "top_logprobs": top[:k] if k else [],
            }
        )
    return {"content": content}
