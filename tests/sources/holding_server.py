"""The ``src-*`` simulator over HTTP, counting requests per probe and able to hold answers.

After ``answer_first`` answers every further request waits until :meth:`release`, so a
test can kill a client while requests are in flight at a point it chooses, without timing.
Requests are counted by (last user message, seed): one key per probe of a run.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from llm.sim.server import BackgroundServer
from llm.sim.source_backend import SourceRoute
from study.sources.items import MCQItem
from study.sources.sim import probe_parser


class HoldingSourceServer(BackgroundServer):
    """``with HoldingSourceServer(items, answer_first=N) as url`` (url ends in ``/v1``)."""

    def __init__(self, items: Sequence[MCQItem], *, answer_first: int | None = None) -> None:
        self.answer_first = answer_first
        self.seen: Counter[tuple[str, int | None]] = Counter()
        self.answered = 0
        self._route = SourceRoute(probe_parser(items))
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

    def _build(self) -> Starlette:
        async def chat(request: Request) -> JSONResponse:
            body: dict[str, Any] = json.loads(await request.body())
            user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
            with self._lock:
                self.seen[(user, body.get("seed"))] += 1
                if self._gate is None:
                    self._loop, self._gate = asyncio.get_running_loop(), asyncio.Event()
                gate = self._gate
                hold = self.answer_first is not None and self.answered >= self.answer_first
                if not hold:
                    self.answered += 1
            if hold:
                await gate.wait()
            answer = self._route(str(body.get("model", "")), body)
            assert answer is not None, "only src-* models are served here"
            return JSONResponse(answer)

        return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
