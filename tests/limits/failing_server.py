"""An OpenAI-compatible endpoint that fails every chat request the same way (500, null,
a stall or a drip)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from llm.sim.server import BackgroundServer
from tests.completion_json import completion_json


class FailingServer(BackgroundServer):
    """``with FailingServer(mode) as url``: ``"500"`` answers 500, ``"null"`` content null,
    ``"stall"`` accepts the request and never answers (until ``healthy``), ``"drip"``
    answers 200 and then sends one byte of whitespace every ``drip_s`` seconds (until
    ``healthy``): no read ever waits long, yet the answer never ends.

    ``healthy = True`` makes it answer every later request with a short text instead.
    """

    def __init__(self, mode: str = "500", *, drip_s: float = 2.0) -> None:
        self.mode = mode
        self.drip_s = drip_s
        self.healthy = False
        self.requests = 0
        self._lock = threading.Lock()
        super().__init__(
            Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])]),
            path="/v1",
        )

    async def _chat(self, request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        with self._lock:
            self.requests += 1
        if self.mode == "drip" and not self.healthy:
            return StreamingResponse(self._drip(), media_type="application/json")
        while self.mode == "stall" and not self.healthy:
            await asyncio.sleep(0.2)
        if not self.healthy and self.mode == "500":
            return JSONResponse({"error": {"message": "boom"}}, status_code=500)
        content = None if not self.healthy else "<answer>I would keep both in mind.</answer>"
        return JSONResponse(
            completion_json(
                content,
                model=body.get("model", "m"),
                completion_id="x",
                prompt_tokens=1,
                completion_tokens=1,
            )
        )

    async def _drip(self) -> AsyncIterator[bytes]:
        while not self.healthy:
            yield b" "
            await asyncio.sleep(self.drip_s)
