"""In-process batch generation with vLLM (``vllm/<path-or-hub-id>``, GPU machines).

``vllm`` is an optional extra and imported only when a batch runs. The mapping from our
:class:`~llm.types.SamplingParams` to vLLM's keyword arguments is a pure function,
:func:`vllm_sampling_kwargs`, tested on every machine without vLLM installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Sequence
from typing import Any

from llm.seeds import derive_seed, request_seed
from llm.types import ChatRequest, ChatResult, ResultCallback, SamplingParams
from storage.errors import ConfigError


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


def check_vllm_available() -> None:
    """Raise a clear :class:`ConfigError` when vLLM or a CUDA GPU is missing.

    Uses ``find_spec`` so the check does not pay vLLM's heavy import; CUDA is checked only
    when torch itself imports.
    """
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(
            "vllm/<model> specs need the optional vLLM extra on a GPU machine "
            "(pip install 'driftlens-workbench[vllm]'); otherwise serve the model with "
            "'vllm serve' and use openai-api/<service>/<model>."
        )
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        raise ConfigError(
            "vllm/<model> specs need a CUDA GPU and torch sees none; use "
            "openai-api/<service>/<model> against a vLLM server instead."
        )


class VLLMBackend:
    """Generate with ``vllm.LLM(...).chat`` in batches, using the model's chat template.

    Args:
        spec: The spec (``vllm/<path-or-hub-id>``).
        model: Local path or hub id.
        batch_size: Conversations per ``LLM.chat`` call (results are reported per batch,
            which bounds what an interruption can lose).
        engine_kwargs: Extra ``vllm.LLM`` arguments (``tensor_parallel_size``,
            ``max_model_len``, ``gpu_memory_utilization``...).
    """

    simulated = False

    def __init__(
        self,
        spec: str,
        model: str,
        *,
        batch_size: int = 256,
        engine_kwargs: dict[str, Any] | None = None,
    ) -> None:
        check_vllm_available()
        self.spec = spec
        self.model = model
        self.batch_size = batch_size
        self.engine_kwargs = dict(engine_kwargs or {})
        self._llm: Any = None

    def endpoint(self) -> str:
        """Return ``vllm-offline@<version>``: a new vLLM release is a new endpoint."""
        import importlib.metadata

        try:
            version = importlib.metadata.version("vllm")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        return f"vllm-offline@{version}"

    def _engine(self) -> Any:
        if self._llm is None:
            import vllm

            kwargs = {"enable_prefix_caching": True, **self.engine_kwargs}
            self._llm = vllm.LLM(model=self.model, **kwargs)
        return self._llm

    def _generate(self, batch: Sequence[ChatRequest]) -> list[ChatResult]:
        import vllm

        llm = self._engine()
        conversations = [
            [{"role": m.role, "content": m.content} for m in r.messages] for r in batch
        ]
        params = [
            vllm.SamplingParams(**vllm_sampling_kwargs(r.sampling, r.sample_index)) for r in batch
        ]
        start = time.perf_counter()
        outputs = llm.chat(conversations, sampling_params=params, use_tqdm=False)
        # Every request of a batch becomes available when the batch ends.
        latency_ms = (time.perf_counter() - start) * 1000.0
        results = []
        for req, out in zip(batch, outputs, strict=True):
            comp = out.outputs[0]
            results.append(
                ChatResult(
                    text=comp.text,
                    finish_reason=comp.finish_reason,
                    prompt_tokens=len(out.prompt_token_ids or []),
                    completion_tokens=len(comp.token_ids or []),
                    latency_ms=latency_ms,
                    error=None,
                    cached=False,
                    cache_key="",
                    attempts=1,
                    model=self.spec,
                    seed=derive_seed(req.sampling.seed, req.sample_index),
                )
            )
        return results

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
            except Exception as exc:  # a failed batch fails its requests, not the run
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
