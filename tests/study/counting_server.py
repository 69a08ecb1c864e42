"""A small OpenAI-compatible server that counts requests per prompt and can hold answers.

It answers well-formed stepped responses. After ``answer_first`` answers it holds every
further request until :meth:`CountingServer.release` is called, so a test can kill a
client while requests are in flight, at a point it chooses, without any timing.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from llm.sim.server import BackgroundServer
from study.reasoning.parsing import render_response
from tests.completion_json import completion_json


class CountingServer(BackgroundServer):
    """``with CountingServer() as url`` (url ends in ``/v1``).

    Args:
        answer_first: Answer this many requests, then hold the rest until released
            (``None``: never hold).
    """

    def __init__(self, *, answer_first: int | None = None) -> None:
        self.answer_first = answer_first
        self.seen: Counter[tuple[str, int | None]] = Counter()
        self.answered = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gate: asyncio.Event | None = None
        super().__init__(self._build(), path="/v1")

    @property
    def received(self) -> int:
        """Requests received so far (held ones included)."""
        with self._lock:
            return sum(self.seen.values())

    def release(self) -> None:
        """Answer held requests and every later one."""
        with self._lock:
            self.answer_first = None
            loop, gate = self._loop, self._gate
        if loop is not None and gate is not None:
            loop.call_soon_threadsafe(gate.set)

    def answer(self, body: dict[str, Any], user: str) -> dict[str, Any]:
        """The chat completion for one request (subclasses answer other shapes)."""
        text = render_response([f"Weigh: {user[-30:]}", "Decide."], "Do the careful thing.")
        return completion_json(
            text,
            model=body.get("model", "counting"),
            completion_id="chatcmpl-count",
            prompt_tokens=10,
            completion_tokens=5,
        )

    def _build(self) -> Starlette:
        async def chat(request: Request) -> JSONResponse:
            body: dict[str, Any] = json.loads(await request.body())
            user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
            key = (user, body.get("seed"))
            with self._lock:
                self.seen[key] += 1
                if self._gate is None:
                    self._loop, self._gate = asyncio.get_running_loop(), asyncio.Event()
                gate = self._gate
                hold = self.answer_first is not None and self.answered >= self.answer_first
                if not hold:
                    self.answered += 1
            if hold:
                await gate.wait()
            return JSONResponse(self.answer(body, user))

        return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def kill_once_stored(
    command: list[str], env: dict[str, str], stored: Callable[[], int], at_least: int
) -> None:
    """Start ``command``, and SIGKILL it once ``stored()`` reaches ``at_least`` rows.

    With the server holding every further answer, the rows can only arrive through the
    run's commit interval; the kill lands while requests are in flight (no timing).

    Args:
        command: The CLI command line.
        env: Its environment (the server's URL in it).
        stored: Counts the rows stored so far.
        at_least: How many rows to wait for (120 s at most, the process alive).
    """
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while stored() < at_least:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never stored a batch"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
