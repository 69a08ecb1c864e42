"""Dead-engine detection of the in-process vLLM backend, with a mocked vLLM engine object.

vLLM cannot run in the project's own virtualenv, so the engine object here is a stand-in
with the layout :mod:`llm.vllm_engine` reads (``llm_engine.engine_core`` with its
``resources.engine_manager.processes``, ``outputs_queue`` and ``utility_results``, as in
vLLM 0.32) around a *real* child process named ``EngineCore`` that the tests SIGKILL at
chosen moments. The real engine is exercised by
``tests/engines/test_inprocess_vllm.py::test_a_dead_engine_ends_the_run_with_one_line_and_no_orphan``.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest

from llm import vllm_backend as vb
from llm import vllm_engine as ve
from llm.types import ChatMessage, ChatRequest, SamplingParams
from storage.errors import ConfigError, ServiceError

CTX = multiprocessing.get_context("fork")


class FakeClient:
    """vLLM's synchronous engine-core client, as far as the backend looks at it."""

    def __init__(self, proc: Any) -> None:
        self.resources = SimpleNamespace(
            engine_manager=SimpleNamespace(processes=[proc]), engine_dead=False
        )
        self.outputs_queue: queue.Queue[Any] = queue.Queue()
        self.utility_results: dict[int, Future[Any]] = {}
        self.shutdowns = 0

    def get_output(self) -> Any:
        out = self.outputs_queue.get()  # no timeout, exactly like vLLM's client
        if isinstance(out, Exception):
            raise out
        return out

    def call_utility(self) -> Any:
        future: Future[Any] = Future()
        self.utility_results[1] = future
        return future.result()  # no timeout either

    def shutdown(self) -> None:
        self.shutdowns += 1


class FakeLLM:
    def __init__(self, proc: Any) -> None:
        self.llm_engine = SimpleNamespace(engine_core=FakeClient(proc))

    @property
    def core(self) -> FakeClient:
        return self.llm_engine.engine_core


def _engine_core() -> Any:
    proc = CTX.Process(target=time.sleep, args=(600,), name="EngineCore", daemon=True)
    proc.start()
    return proc


def _kill_later(proc: Any, after_s: float) -> threading.Timer:
    timer = threading.Timer(after_s, os.kill, args=(proc.pid, signal.SIGKILL))
    timer.start()
    return timer


@pytest.fixture
def core_proc() -> Any:
    proc = _engine_core()
    yield proc
    if proc.is_alive():
        proc.kill()
    proc.join(5)
    ve._SEEN_CORES.clear()


@pytest.mark.parametrize("kill_after_s", [0.0, 0.05, 0.6])
def test_mocked_engine_killed_while_generating_fails_the_call_fast(
    core_proc: Any, kill_after_s: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A call left to the unblock grace would take a minute: the bound below tells that apart
    # from a woken call with room for a loaded machine (a clock bound near the work failed CI).
    monkeypatch.setattr(ve, "UNBLOCK_GRACE_S", 60.0)
    llm = FakeLLM(core_proc)
    if kill_after_s == 0.0:  # already dead when the call starts
        os.kill(core_proc.pid, signal.SIGKILL)
        core_proc.join(5)
    else:
        _kill_later(core_proc, kill_after_s)
    threads_before = set(threading.enumerate())
    start = time.monotonic()
    with pytest.raises(ve.EngineDied, match=r"EngineCore \(pid \d+\) ended by signal SIGKILL"):
        asyncio.run(ve.watched_call(llm.core.get_output, lambda: llm))
    assert time.monotonic() - start < kill_after_s + 30.0
    # The waiting call was woken (an error on its queue), not left behind.
    deadline = time.monotonic() + 5
    while set(threading.enumerate()) - threads_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(threading.enumerate()) - threads_before
    assert llm.core.resources.engine_dead


def test_mocked_engine_killed_during_a_utility_call_wakes_it(core_proc: Any) -> None:
    llm = FakeLLM(core_proc)
    _kill_later(core_proc, 0.3)
    with pytest.raises(ve.EngineDied):
        asyncio.run(ve.watched_call(llm.core.call_utility, lambda: llm))
    assert all(f.done() for f in llm.core.utility_results.values())


def test_mocked_call_that_cannot_be_woken_is_left_behind(
    core_proc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ve, "UNBLOCK_GRACE_S", 0.2)
    llm = FakeLLM(core_proc)
    stuck = threading.Event()
    _kill_later(core_proc, 0.2)
    start = time.monotonic()
    with pytest.raises(ve.EngineDied):
        asyncio.run(ve.watched_call(stuck.wait, lambda: llm))  # nothing can wake this one
    assert time.monotonic() - start < 30.0  # a hang guard: without the grace it never returns
    stuck.set()


def test_mocked_engine_dying_while_it_is_created_is_noticed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before an engine object exists, the engine-core children seen alive are watched."""
    monkeypatch.setattr(ve, "UNBLOCK_GRACE_S", 0.2)  # nothing to wake before there is an engine
    started: list[Any] = []

    def create() -> None:
        proc = _engine_core()
        started.append(proc)
        _kill_later(proc, 0.6)  # after the watcher has seen it alive
        threading.Event().wait(30)  # vLLM's start-up waiting on a dead engine

    try:
        with pytest.raises(ve.EngineDied, match="SIGKILL"):
            asyncio.run(ve.watched_call(create, lambda: None))
    finally:
        for proc in started:
            proc.join(5)
        ve._SEEN_CORES.clear()


def test_mocked_healthy_engine_call_returns_its_result(core_proc: Any) -> None:
    llm = FakeLLM(core_proc)
    threading.Timer(0.4, llm.core.outputs_queue.put, args=("outputs",)).start()
    assert asyncio.run(ve.watched_call(llm.core.get_output, lambda: llm)) == "outputs"
    with pytest.raises(ZeroDivisionError):  # the call's own errors pass through unchanged
        asyncio.run(ve.watched_call(lambda: 1 / 0, lambda: llm))


def test_mocked_shutdown_that_hangs_is_bounded_and_kills_the_engine(
    core_proc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = FakeLLM(core_proc)
    llm.core.shutdown = threading.Event().wait  # type: ignore[method-assign,assignment]  # never returns
    monkeypatch.setitem(ve._ENGINES, "fake", llm)
    start = time.monotonic()
    assert ve.shutdown_engines(timeout_s=0.5) == 1
    # the default timeout is 30 s: 20 s tells the given one apart, with room for a loaded machine
    assert ve.SHUTDOWN_TIMEOUT_S >= 30.0 and time.monotonic() - start < 20.0
    core_proc.join(5)
    assert not core_proc.is_alive() and core_proc.exitcode == -signal.SIGKILL
    assert ve._ENGINES == {}


def test_mocked_dead_engine_ends_the_batch_with_one_service_error(
    core_proc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vb, "check_vllm_available", lambda: None)
    backend = vb.VLLMBackend("vllm/fake", "fake", batch_size=2, engine_kwargs={})
    llm = FakeLLM(core_proc)
    calls: list[int] = []

    def generate(batch: list[ChatRequest]) -> list[Any]:
        backend._llm = llm
        calls.append(len(batch))
        llm.core.get_output()  # the engine dies while this batch waits
        raise AssertionError("not reached")

    monkeypatch.setattr(backend, "_generate", generate)
    monkeypatch.setitem(ve._ENGINES, "fake", llm)
    request = ChatRequest((ChatMessage("user", "hi"),), SamplingParams(seed=1, max_tokens=4))
    _kill_later(core_proc, 0.3)
    with pytest.raises(ServiceError) as info:
        asyncio.run(backend.achat([request] * 5, concurrency=1))
    message = str(info.value)
    assert "\n" not in message
    assert "vLLM engine for fake died (EngineCore" in message
    assert "after 0 of 5 requests" in message and "run the same command again" in message
    assert calls == [2]  # the later batches were not attempted
    assert ve._ENGINES == {}  # the dead engine was shut down (and forgotten)


def _exit_with(code: int) -> None:
    os._exit(code)


@pytest.mark.parametrize(("end", "expected"), [("killed", "died"), ("failed", "cannot run")])
def test_mocked_engine_ending_while_it_starts(
    monkeypatch: pytest.MonkeyPatch, end: str, expected: str
) -> None:
    """Killed while starting: a dead engine; exiting with an error: it cannot run here."""
    started: list[Any] = []

    def fake_llm(model: str, **kwargs: Any) -> Any:
        if end == "killed":
            proc = CTX.Process(target=time.sleep, args=(600,), name="EngineCore")
        else:
            proc = CTX.Process(target=_exit_with, args=(1,), name="EngineCore")
        proc.start()
        started.append(proc)
        ve._observe_cores()  # what the watcher does while an engine starts
        if end == "killed":
            proc.kill()
        proc.join(5)
        raise RuntimeError("Engine core initialization failed. See root cause above.")

    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(LLM=fake_llm))
    try:
        if expected == "died":
            with pytest.raises(ve.EngineDied, match=r"EngineCore \(pid \d+\) ended by signal"):
                ve.shared_engine("tiny", {})
        else:
            with pytest.raises(ConfigError, match="cannot run tiny on this machine"):
                ve.shared_engine("tiny", {})
    finally:
        ve._SEEN_CORES.clear()
