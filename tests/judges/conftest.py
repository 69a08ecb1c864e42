"""Fixtures for filter and judge tests: sessions, a CLI runner, scripted and counting backends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import pytest
from sqlmodel import Session
from typer.testing import CliRunner, Result

from llm.types import ChatRequest, ChatResult, ResultCallback

Script = Callable[[list[tuple[str, str]]], str | None]


class ScriptedBackend:
    """A backend whose reply to a conversation is ``script(messages)`` (``None`` = failure).

    Counts requests, so tests can check what a re-run sends.
    """

    simulated = True

    def __init__(self, script: Script, spec: str = "openai-api/scripted/judge") -> None:
        self.script = script
        self.spec = spec
        self.requests: list[list[tuple[str, str]]] = []

    def endpoint(self) -> str:
        return "scripted://test"

    async def achat(
        self,
        requests: Sequence[ChatRequest],
        *,
        concurrency: int,
        on_result: ResultCallback | None = None,
    ) -> list[ChatResult]:
        out: list[ChatResult] = []
        for i, req in enumerate(requests):
            messages = [(m.role, m.content) for m in req.messages]
            self.requests.append(messages)
            text = self.script(messages)
            start = time.perf_counter()
            res = ChatResult(
                text=text,
                finish_reason="stop" if text is not None else None,
                prompt_tokens=1,
                completion_tokens=1,
                latency_ms=(time.perf_counter() - start) * 1000,
                error=None if text is not None else "scripted failure",
                cached=False,
                cache_key="",
                attempts=1,
                model=self.spec,
                simulated=True,
                error_kind=None if text is not None else "server",
            )
            out.append(res)
            if on_result is not None:
                on_result(i, req, res)
            await asyncio.sleep(0)
        return out


@pytest.fixture
def session() -> Iterator[Session]:
    """One committing session on the test workspace."""
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings()) as s:
        yield s


@pytest.fixture
def db() -> Callable[[], AbstractContextManager[Session]]:
    """Open another session on the test workspace."""
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    return lambda: open_workspace_session(resolve_settings())


@pytest.fixture
def cli() -> Callable[..., Result]:
    """Run ``driftlens ARGS`` in-process."""
    from app.cli.root import build_app

    def run(*args: str) -> Result:
        return CliRunner().invoke(build_app(), list(args), catch_exceptions=True)

    return run


@pytest.fixture
def sim_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every conversation the simulator answers (in-process and over HTTP)."""
    import llm.sim.backend
    import llm.sim.server
    from llm.sim.chat import simulate_chat

    calls: list[str] = []

    def counted(messages: Any, **kwargs: Any) -> Any:
        calls.append(messages[-1][1])
        return simulate_chat(messages, **kwargs)

    monkeypatch.setattr(llm.sim.backend, "simulate_chat", counted)
    monkeypatch.setattr(llm.sim.server, "simulate_chat", counted)
    return calls
