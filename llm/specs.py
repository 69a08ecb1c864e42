"""Parse ``provider/model`` specs and resolve their endpoints from the environment.

Specs are the names users type (``openai/gpt-4o-mini``, ``openai-api/vllm/Qwen/Qwen3-4B``,
``vllm/Qwen/Qwen3-4B``, ``sim/default``). API keys are looked up in the environment at the
moment a backend is built and never leave it: they are not part of :class:`ModelSpec`,
of any cache key, log line or error message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

from pydantic import BeforeValidator, PlainSerializer

from storage.errors import ConfigError

PROVIDERS: tuple[str, ...] = ("openai", "openai-api", "vllm", "sim")
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

_SERVICE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: the value every layer passes after the edge has parsed the text.

    It is the one place that knows what a spec's parts mean: code elsewhere asks
    ``spec.simulated`` or ``spec.in_process_engine`` instead of testing the text's prefix
    (tests/test_layout.py refuses a prefix test on spec text outside this module).

    Attributes:
        spec: The normalised spec string (``provider/...``).
        provider: One of :data:`PROVIDERS`.
        service: The OpenAI-compatible service name for ``openai-api`` specs, else ``None``.
        model: The model id sent to the provider (for ``sim`` the preset name).
        simulated: True for the built-in drift simulator in this process (``sim/...``).
    """

    spec: str
    provider: str
    service: str | None
    model: str
    simulated: bool

    @classmethod
    def parse(cls, text: str | ModelSpec) -> ModelSpec:
        """Parse ``text`` (a spec already parsed is returned as it is); see :func:`parse_spec`."""
        return text if isinstance(text, ModelSpec) else parse_spec(text)

    def __str__(self) -> str:
        return self.spec

    @property
    def simulator_output(self) -> bool:
        """True when the answers come from the simulator, here or served over HTTP.

        A served simulator (``driftlens sim serve``) names its models ``sim/<preset>``, so
        ``openai-api/<service>/sim/<preset>`` answers with simulated text too: a result made
        from it is labelled simulated although the request crossed a real HTTP client.
        """
        return self.simulator_preset is not None

    @property
    def in_process_engine(self) -> bool:
        """True for ``vllm/...``: an engine loaded in this process (a task reserves a GPU)."""
        return self.provider == "vllm"

    @property
    def over_http(self) -> bool:
        """True for the providers reached through an OpenAI-compatible HTTP endpoint."""
        return self.provider in ("openai", "openai-api")

    @property
    def simulator_preset(self) -> str | None:
        """The simulator preset this spec names (``sim/mc-balanced`` → ``mc-balanced``)."""
        if self.simulated:
            return self.model
        if self.provider == "openai-api" and _is_sim_model_id(self.model):
            return self.model.partition("/")[2]
        return None


def _spec_field(value: object) -> ModelSpec:
    if isinstance(value, (str, ModelSpec)):
        return ModelSpec.parse(value)
    raise ConfigError(f"A model spec is text such as sim/default, not {type(value).__name__}.")


#: A pydantic field holding a :class:`ModelSpec`: text is parsed when the options are made
#: (a bad spec raises :class:`ConfigError`, one sentence), and the spec dumps as its
#: canonical text, so an options model's JSON (and any digest of it) keeps its shape.
SpecField = Annotated[
    ModelSpec, BeforeValidator(_spec_field), PlainSerializer(str, return_type=str)
]


def _is_sim_model_id(model: str) -> bool:
    head, sep, preset = model.partition("/")
    return head == "sim" and bool(sep) and bool(preset) and "/" not in preset


@dataclass(frozen=True)
class EndpointConfig:
    """Where an OpenAI-compatible spec sends requests; holds the key only in memory.

    ``api_key`` is excluded from ``repr`` so that printing the config never shows it.
    """

    base_url: str
    api_key_env: str | None
    api_key: str | None = None

    def __repr__(self) -> str:
        return f"EndpointConfig(base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"


def _usage() -> str:
    return "use openai/<model>, openai-api/<service>/<model>, vllm/<path-or-hub-id> or sim/<preset>"


def parse_spec(spec: str) -> ModelSpec:
    """Parse a ``provider/model`` spec.

    Args:
        spec: The spec string, e.g. ``openai-api/vllm/Qwen/Qwen3-4B``.

    Returns:
        The parsed spec.

    Raises:
        ConfigError: When the spec is empty, names an unknown provider or lacks a model.
    """
    text = (spec or "").strip()
    if not text:
        raise ConfigError(f"Empty model spec; {_usage()}.")
    provider, sep, rest = text.partition("/")
    if not sep or not rest.strip("/"):
        raise ConfigError(f"Model spec {text!r} names no model; {_usage()}.")
    provider = provider.lower()
    if provider not in PROVIDERS:
        raise ConfigError(f"Unknown provider {provider!r} in model spec {text!r}; {_usage()}.")
    if provider == "openai-api":
        service, sep2, model = rest.partition("/")
        if not sep2 or not service or not model.strip("/"):
            raise ConfigError(
                f"Model spec {text!r} needs a service and a model: openai-api/<service>/<model>."
            )
        if not _SERVICE_RE.match(service):
            raise ConfigError(
                f"Service name {service!r} in {text!r} must start with a letter and contain only "
                "letters, digits, '-' and '_'."
            )
        return ModelSpec(f"openai-api/{service}/{model}", provider, service, model, False)
    if provider == "sim":
        preset = rest.strip("/")
        if "/" in preset:
            raise ConfigError(f"Model spec {text!r}: a simulator preset is one word (sim/default).")
        return ModelSpec(f"sim/{preset}", provider, None, preset, True)
    return ModelSpec(f"{provider}/{rest}", provider, None, rest, False)


def preset_name(name: str) -> str:
    """A simulator preset's bare name, whether written ``sim/<preset>`` or ``<preset>``."""
    text = name.strip()
    return text[len("sim/") :] if text.startswith("sim/") else text


def simulator_spec(name: str) -> str:
    """The ``sim/<preset>`` spec of a preset written with or without its ``sim/``."""
    return f"sim/{preset_name(name)}"


def is_simulator_model_id(model_id: str | None) -> bool:
    """Whether a server's reported model id is one of the simulator's (``sim/<preset>``)."""
    return bool(model_id) and _is_sim_model_id(str(model_id))


def spec_simulated(text: str) -> bool:
    """Whether a stored spec's answers come from the simulator (False for unparsable text).

    For labels on stored results (a judge column, a run's model), where a malformed value
    is not this question's error to raise.
    """
    try:
        return parse_spec(text).simulator_output
    except ConfigError:
        return False


def service_env_prefix(service: str) -> str:
    """Return the environment prefix of a service (``my-vllm`` → ``MY_VLLM``)."""
    return service.upper().replace("-", "_")


def clean_url(url: str) -> str:
    """Drop user info, query and fragment from a URL and any trailing slash.

    The result is safe to print and to put in a cache key (a key smuggled into the URL as
    ``https://user:key@host`` or ``?api_key=`` never survives).
    """
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def _check_url(url: str, var: str) -> str:
    """Check one URL, or several comma-separated replicas of one service (kept in order)."""
    checked: list[str] = []
    for part in url.split(","):
        parts = urlsplit(part.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"{var} must be an http(s) URL such as http://127.0.0.1:8000/v1 "
                "(or several, separated by commas)."
            )
        checked.append(part.strip().rstrip("/"))
    return ",".join(dict.fromkeys(checked))


def resolve_endpoint(info: ModelSpec, env: dict[str, str] | None = None) -> EndpointConfig:
    """Resolve base URL and API key of an OpenAI-compatible spec from the environment.

    Args:
        info: A parsed ``openai`` or ``openai-api`` spec.
        env: The environment to read (default ``os.environ``).

    Returns:
        The endpoint; ``api_key`` is read from the environment only.

    Raises:
        ConfigError: When a required variable is missing or the URL is malformed. The
            message names the variable, never its value.
    """
    environ = os.environ if env is None else env
    if info.provider == "openai":
        key = environ.get("OPENAI_API_KEY", "").strip()
        if not key:
            raise ConfigError(f"Model {info.spec} needs OPENAI_API_KEY in the environment.")
        raw = environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_DEFAULT_BASE_URL
        return EndpointConfig(_check_url(raw, "OPENAI_BASE_URL"), "OPENAI_API_KEY", key)
    if info.provider == "openai-api":
        assert info.service is not None
        prefix = service_env_prefix(info.service)
        url_var, key_var = f"{prefix}_BASE_URL", f"{prefix}_API_KEY"
        raw = environ.get(url_var, "").strip()
        if not raw:
            raise ConfigError(
                f"Model {info.spec} needs {url_var} in the environment "
                "(e.g. http://127.0.0.1:8000/v1)."
            )
        key = environ.get(key_var, "").strip()
        if not key:
            # Local servers (vllm serve without --api-key) accept anything, but a silent
            # placeholder would hide a forgotten key on a real service: ask for it.
            raise ConfigError(
                f"Model {info.spec} needs {key_var} in the environment "
                "(any non-empty value for a server without authentication)."
            )
        return EndpointConfig(_check_url(raw, url_var), key_var, key)
    raise ConfigError(f"Model {info.spec} is not served over an OpenAI-compatible API.")


def check_endpoint(spec: str, env: Mapping[str, str] | None = None) -> ModelSpec:
    """Parse ``spec`` and, for an API model, resolve its endpoint: before any work starts.

    A run (or a page's background job) checks its models with this first, so a model
    whose endpoint is not configured is one sentence before a run is stored or a job is
    recorded, not a failed run with a Resume that fails the same way.

    Raises:
        ConfigError: a malformed spec, or an endpoint whose variables are missing.
    """
    info = parse_spec(spec)
    if info.over_http:
        resolve_endpoint(info, env=None if env is None else dict(env))
    return info
