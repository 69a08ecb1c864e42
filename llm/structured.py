"""Structured outputs: the format a formatted answer must take, and how it is asked for.

Every caller that parses a model's answer (labelers, judges, classifiers) declares the
answer's format once, next to its parser: a JSON schema (usually from a pydantic model), an
enumerated choice, or a regex. :class:`ResponseFormat` is that declaration; a request
carries it in ``ChatRequest.response_format`` and it enters the cache key only when set, so
answers stored before structured outputs existed keep their keys.

How a format reaches the engine is the backend's business:

* a JSON schema: the standard ``response_format`` ``json_schema`` with ``strict: true`` (the
  OpenAI API, vLLM's OpenAI server and most compatible servers take it);
* choice and regex: vLLM's ``structured_outputs`` extra (``choice`` / ``regex``), sent only to
  servers that take vLLM's extras; the OpenAI API has no form of them, so there those requests
  go without a constraint and are parsed and repaired as before;
* the simulator honours the format itself (:func:`conform_text`).

The mode (``--structured auto|on|off``, env ``DRIFTLENS_STRUCTURED``) decides whether formats
are attached at all: ``off`` never (today's prompt-and-repair requests, today's cache keys),
``auto`` (default) attaches them and falls back to prompt-and-repair where an endpoint refuses
them, ``on`` attaches them and turns a refusal into a request error. Support is detected once
per endpoint and remembered for the process (:class:`SupportRegistry`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from storage.errors import ConfigError

STRUCTURED_ENV = "DRIFTLENS_STRUCTURED"
MODES: tuple[str, ...] = ("auto", "on", "off")
StructuredMode = Literal["auto", "on", "off"]
FormatKind = Literal["json_schema", "choice", "regex"]

logger = logging.getLogger("driftlens.structured")

#: ``output_flags`` of a result: the format was not sent (the endpoint refused it) / the
#: endpoint took it but answered text that does not follow it.
FLAG_FALLBACK = "structured_fallback"
FLAG_IGNORED = "structured_ignored"


@dataclass(frozen=True)
class ResponseFormat:
    """The format one answer must follow.

    Attributes:
        kind: ``json_schema``, ``choice`` or ``regex``.
        name: A short name of the answer (``judge_verdict``), sent with a JSON schema.
        schema: The JSON schema (``json_schema`` only), a plain JSON-ready mapping.
        choices: The allowed answers (``choice`` only), in order.
        pattern: The regular expression the whole answer matches (``regex`` only).
    """

    kind: FormatKind
    name: str
    schema: Mapping[str, Any] | None = None
    choices: tuple[str, ...] | None = None
    pattern: str | None = None

    def __post_init__(self) -> None:
        wanted = {"json_schema": self.schema, "choice": self.choices, "regex": self.pattern}
        if self.kind not in wanted:
            raise ValueError(f"unknown response format kind {self.kind!r}")
        if not wanted[self.kind]:
            raise ValueError(f"a {self.kind} response format needs its {self.kind} value")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (what enters the cache key and the stored request)."""
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.schema is not None:
            out["schema"] = json.loads(json.dumps(self.schema))
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.pattern is not None:
            out["pattern"] = self.pattern
        return out

    def accepts(self, text: str | None) -> bool:
        """Whether ``text`` follows the format (the check of an engine that claimed support).

        A JSON schema answer must be one JSON value of the schema's root type whose
        required keys are present; deeper rules are the caller's parser's job.
        """
        if text is None:
            return False
        if self.kind == "choice":
            return text.strip() in (self.choices or ())
        if self.kind == "regex":
            return re.fullmatch(self.pattern or "", text.strip()) is not None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return False
        return _matches_root(value, self.schema or {})


def _matches_root(value: Any, schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "object":
        required = schema.get("required") or ()
        return isinstance(value, dict) and all(k in value for k in required)
    if kind == "array":
        return isinstance(value, list)
    return True


def model_schema(name: str, model: type[Any]) -> ResponseFormat:
    """A strict JSON schema format from a pydantic model.

    Strict (OpenAI's rules): every property required, no additional properties, and no
    ``title`` noise (the schema is part of the cache key, so it is kept minimal).
    """
    schema = _strict(model.model_json_schema())
    return ResponseFormat("json_schema", name, schema=schema)


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items() if k != "title"}
        if out.get("type") == "object" and "properties" in out:
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def object_schema(name: str, properties: Mapping[str, Mapping[str, Any]]) -> ResponseFormat:
    """A strict JSON schema format of one object with exactly ``properties`` (all required)."""
    schema = {
        "type": "object",
        "properties": {k: dict(v) for k, v in properties.items()},
        "required": list(properties),
        "additionalProperties": False,
    }
    return ResponseFormat("json_schema", name, schema=schema)


def choice_format(name: str, choices: Sequence[str]) -> ResponseFormat:
    """An enumerated single answer (e.g. a multiple-choice letter)."""
    return ResponseFormat("choice", name, choices=tuple(choices))


# ----------------------------------------------------------------------------- the mode

_MODE: ContextVar[str | None] = ContextVar("driftlens_structured_mode", default=None)


def check_mode(value: str, *, source: str = "--structured") -> StructuredMode:
    """Validate a mode name.

    Raises:
        ConfigError: Not one of ``auto``, ``on``, ``off``.
    """
    mode = value.strip().lower()
    if mode not in MODES:
        raise ConfigError(f"{source} must be auto, on or off, not {value!r}.")
    return mode  # type: ignore[return-value]


def structured_mode() -> StructuredMode:
    """The mode in force: :func:`use_structured`, else ``DRIFTLENS_STRUCTURED``, else auto."""
    value = _MODE.get()
    if value is not None:
        return check_mode(value)
    env = os.environ.get(STRUCTURED_ENV, "").strip()
    return check_mode(env, source=STRUCTURED_ENV) if env else "auto"


@contextmanager
def use_structured(mode: str) -> Iterator[StructuredMode]:
    """Set the mode of everything asked inside the ``with`` block."""
    token = _MODE.set(check_mode(mode))
    try:
        yield structured_mode()
    finally:
        _MODE.reset(token)


# -------------------------------------------------------------------- endpoint support


@dataclass
class EndpointSupport:
    """What one endpoint did with response formats (remembered for the process).

    Attributes:
        refused: The endpoint answered 400 to a request with a format (its text kept);
            later requests go without one.
        honoured: Answers that followed the format.
        ignored: Answers of requests with a format that did not follow it.
    """

    refused: str | None = None
    honoured: int = 0
    ignored: int = 0
    warned: set[str] = field(default_factory=set)


class SupportRegistry:
    """Per-endpoint structured-output support, detected on the first requests and kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_endpoint: dict[str, EndpointSupport] = {}

    def get(self, endpoint: str) -> EndpointSupport:
        with self._lock:
            return self._by_endpoint.setdefault(endpoint, EndpointSupport())

    def refused(self, endpoint: str, detail: str) -> None:
        """Record a refusal and say so once (``detail`` names the endpoint and its answer)."""
        support = self.get(endpoint)
        support.refused = detail
        self._warn_once(
            support,
            "refused",
            f"{detail.rstrip('.')} when asked for a structured output format; its requests "
            f"go without one from now on (fallback: prompt-and-repair).",
        )

    def answered(self, endpoint: str, followed: bool) -> None:
        """Count an answer of a request that carried a format; say once when it was ignored."""
        support = self.get(endpoint)
        if followed:
            support.honoured += 1
            return
        support.ignored += 1
        self._warn_once(
            support,
            "ignored",
            f"Model endpoint {endpoint} accepted the structured output format but answered "
            "text that does not follow it; such replies are parsed and repaired "
            "(prompt-and-repair).",
        )

    def _warn_once(self, support: EndpointSupport, what: str, message: str) -> None:
        with self._lock:
            if what in support.warned:
                return
            support.warned.add(what)
        logger.warning(message)

    def clear(self) -> None:
        """Forget everything (tests)."""
        with self._lock:
            self._by_endpoint.clear()


SUPPORT = SupportRegistry()


#: A :class:`llm.types.ChatRequest` (not imported: llm.types refers to this module).
Request = TypeVar("Request")


def with_format(request: Request, fmt: ResponseFormat | None) -> Request:
    """``request`` with ``fmt`` and the mode in force attached (unchanged in mode ``off``).

    Args:
        request: The request.
        fmt: The answer's format, or ``None`` (the request is returned as it is).
    """
    mode = structured_mode()
    if fmt is None or mode == "off":
        return request
    return replace(request, response_format=fmt, structured=mode)  # type: ignore[type-var]
