"""Models an instrument's set-up form offers: simulator presets and configured endpoints.

A researcher picks a model from what this machine can reach: the instrument's simulator
presets (``sim/...``, offline) and every OpenAI-compatible service whose
``<SERVICE>_BASE_URL`` is set in the environment (``openai-api/<service>/<model>``), plus
OpenAI itself when ``OPENAI_API_KEY`` is set. A typed spec is checked here the way a run
would resolve it, so a form refuses an unreachable model in one sentence before any job
starts. Only variable *names* are read for the list; keys are never returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from llm.specs import ModelSpec, parse_spec, resolve_endpoint
from storage.errors import ConfigError, InputError

SIMULATOR = "simulator"


@dataclass(frozen=True)
class Endpoint:
    """A source of models for a form: the simulator or one configured service.

    Attributes:
        name: ``simulator``, ``openai`` or the service name (``vllm``, ``my-vllm``).
        prefix: What a model spec of it starts with (``sim/``, ``openai/``,
            ``openai-api/vllm/``).
        note: One line saying where it comes from (never a URL or key).
    """

    name: str
    prefix: str
    note: str


def configured_endpoints(env: Mapping[str, str]) -> list[Endpoint]:
    """The simulator first, then OpenAI (when its key is set), then each ``*_BASE_URL``.

    Args:
        env: The environment of the app server (``os.environ``).
    """
    out = [Endpoint(SIMULATOR, "sim/", "built-in simulator (offline, known ground truth)")]
    if env.get("OPENAI_API_KEY", "").strip():
        out.append(Endpoint("openai", "openai/", "OpenAI API (OPENAI_API_KEY is set)"))
    for var in sorted(env):
        if not var.endswith("_BASE_URL") or var == "OPENAI_BASE_URL" or not env[var].strip():
            continue
        service = var.removesuffix("_BASE_URL").lower().replace("_", "-")
        if not service or not service[0].isalpha():
            continue
        out.append(Endpoint(service, f"openai-api/{service}/", f"{var} is set"))
    return out


def check_model(spec: str, *, env: Mapping[str, str], presets: Mapping[str, str]) -> ModelSpec:
    """The parsed spec of a model a form was given, checked as a run would resolve it.

    Args:
        spec: ``sim/<preset>``, ``openai/<model>`` or ``openai-api/<service>/<model>``.
        env: The environment the job will run in.
        presets: The simulator models this instrument accepts (``sim/...`` → description).

    Raises:
        InputError: an unknown simulator model for this instrument.
        ConfigError: a malformed spec, or an endpoint whose variables are not set.
    """
    info = parse_spec(spec)
    if info.simulated:
        if info.spec not in presets:
            known = ", ".join(sorted(presets)) or "none"
            raise InputError(f"Unknown simulator model {info.spec!r} here; use one of {known}.")
        return info
    if info.over_http:
        resolve_endpoint(info, env=dict(env))
        return info
    raise ConfigError(
        f"Model {info.spec!r} is not served over an API; the browser runs "
        "sim/<preset>, openai/<model> or openai-api/<service>/<model>."
    )
