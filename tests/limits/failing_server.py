"""An OpenAI-compatible endpoint that fails every chat request the same way (500 or null)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from llm.sim.server import BackgroundServer
from tests.completion_json import completion_json


class FailingServer(BackgroundServer):
    """``with FailingServer(mode) as url``: ``"500"`` answers 500, ``"null"`` content null,
    ``"stall"`` accepts the request and never answers (until ``healthy``).

    ``healthy = True`` makes it answer every later request with a short text instead.
    """

    def __init__(self, mode: str = "500") -> None:
        self.mode = mode
        self.healthy = False
        self.requests = 0
        self._lock = threading.Lock()
        super().__init__(
            Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])]),
            path="/v1",
        )

    async def _chat(self, request: Request) -> JSONResponse:
        body: dict[str, Any] = await request.json()
        with self._lock:
            self.requests += 1
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
