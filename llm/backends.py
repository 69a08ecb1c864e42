"""``get_backend(spec)``: the one place that turns a parsed model spec into a backend."""

from __future__ import annotations

from llm.limits import current_limits
from llm.openai_backend import OpenAIBackend
from llm.retry import RetryPolicy
from llm.specs import ModelSpec, resolve_endpoint
from llm.types import ChatBackend


def get_backend(
    spec: ModelSpec,
    *,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    retry: RetryPolicy | None = None,
) -> ChatBackend:
    """Build the backend named by a ``provider/model`` spec.

    Args:
        spec: The parsed spec (``openai/<model>``, ``openai-api/<service>/<model>``,
            ``vllm/<model>`` or ``sim/<preset>``); the edge that read the text parsed it.
        env: Environment to read URLs and keys from (default ``os.environ``).
        timeout_s: Per-request timeout of HTTP backends (default: the limits in force,
            see :mod:`llm.limits`: ``--timeout``, ``DRIFTLENS_REQUEST_TIMEOUT_S``, 120 s).
        retry: Retry policy of HTTP backends (default: the limits' ``max_attempts``).

    Raises:
        ConfigError: For missing variables, unknown presets, or vLLM
            without its extra or a GPU.
    """
    info = spec
    if info.simulated:
        from llm.sim.backend import SimBackend

        return SimBackend(info.model)
    if info.in_process_engine:
        from llm.vllm_backend import VLLMBackend

        return VLLMBackend(info.spec, info.model)
    endpoint = resolve_endpoint(info, env)
    limit_timeout, limit_attempts = current_limits(env)
    if timeout_s is None:
        timeout_s = limit_timeout
    if retry is None:
        retry = RetryPolicy(max_attempts=limit_attempts)
    assert endpoint.api_key is not None
    is_openai = info.provider == "openai"
    return OpenAIBackend(
        info.spec,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        model=info.model,
        vllm_extras=not is_openai,
        max_completion_tokens=is_openai,
        timeout_s=timeout_s,
        retry=retry,
        key_env=endpoint.api_key_env,
    )
