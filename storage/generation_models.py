"""SQLModel tables of generation: perturbation catalogs, models, runs, prompts, responses.

A response's steps are stored as spans of its text when they can be (:mod:`storage.step_spans`);
the load/refresh listeners below give every loaded response its steps as strings.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import Text, UniqueConstraint, event
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Field, SQLModel

# No `from __future__ import annotations`: SQLModel reads the annotations at class creation.
import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.step_spans import has_spans, unpack_steps
from storage.types import JSONType, NullableJSONType
from storage.types import created_at_field as _created
from storage.types import updated_at_field as _updated

# Documented values of the enumerated string columns.
PERTURBATION_CLASS_VALUES = ("noise", "attribute", "life_event", "other")
RESPONSE_CLASS_VALUES = ("none", *PERTURBATION_CLASS_VALUES)
BASELINE_CONDITION = "baseline"


# ---------------------------------------------------------------------- perturbations


class PerturbationCatalog(SQLModel, table=True):
    """An immutable, versioned set of perturbations (memory lines)."""

    __tablename__ = "perturbation_catalog"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_perturbation_catalog_key"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    version: int = 1
    note: str | None = Field(default=None, sa_type=Text)
    content_hash: str | None = None
    created_at: datetime = _created()


class Perturbation(SQLModel, table=True):
    """One memory line of a catalog; ``key`` is stable across catalog versions."""

    __tablename__ = "perturbation"
    __table_args__ = (UniqueConstraint("catalog_id", "key", name="uq_perturbation_key"),)

    id: int | None = Field(default=None, primary_key=True)
    catalog_id: int = Field(foreign_key="perturbation_catalog.id", index=True, ondelete="CASCADE")
    key: str
    condition_class: str
    category: str
    text: str = Field(sa_type=Text)


# ------------------------------------------------------------------------- generation


class ModelSpecRow(SQLModel, table=True):
    """The stored row of a model spec (``llm.specs.ModelSpec``; see docs/engines.md)."""

    __tablename__ = "model_spec"

    id: int | None = Field(default=None, primary_key=True)
    spec: str = Field(unique=True)
    provider: str
    service: str | None = None
    model: str
    simulated: bool = False
    params: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()


class GenerationRun(SQLModel, table=True):
    """A named generation run: one model, one prompt version, fixed sampling."""

    __tablename__ = "generation_run"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    model_spec_id: int = Field(foreign_key="model_spec.id", index=True)
    catalog_id: int | None = Field(default=None, foreign_key="perturbation_catalog.id", index=True)
    prompt_version: str
    sampling: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    simulated: bool = False
    status: str = "pending"
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class Prompt(SQLModel, table=True):
    """Rendered chat messages, stored once and referenced by every request that sent them.

    ``hash`` is the sha256 of the canonical JSON of the whole message list (see
    :mod:`storage.repo.requests`), so equal prompts share one row across runs and the cache.

    The leading system messages (the instruction every prompt of a study repeats) are
    stored once, as a prompt row of their own that ``prefix_id`` points at; ``messages``
    then holds only the rest. :func:`storage.repo.requests.prompt_messages` returns the
    whole list. ``prefix_id`` NULL: ``messages`` is the whole list.
    """

    __tablename__ = "prompt"

    id: int | None = Field(default=None, primary_key=True)
    hash: str = Field(unique=True)
    prefix_id: int | None = None  # no FOREIGN KEY clause: see Response
    messages: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSONType)


class RequestParams(SQLModel, table=True):
    """The request fields shared by many requests (model, prompt version, sampling without
    the per-request seed...), stored once; ``hash`` as for :class:`Prompt`."""

    __tablename__ = "request_params"

    id: int | None = Field(default=None, primary_key=True)
    hash: str = Field(unique=True)
    body: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)


class Response(SQLModel, table=True):
    """One sampled answer to one (question, condition) in a run.

    ``UNIQUE(run_id, question_id, condition, sample)`` makes resumed runs duplicate-free
    (its leading ``run_id`` also serves every per-run query, so there is no separate index).
    ``perturbation_id`` is NULL and ``condition`` is ``"baseline"`` for the no-memory answer.

    The request is stored normalised: ``prompt_id`` (the messages), ``params_id`` (the shared
    parameters) and ``request`` (only what is this request's own: its seed, parse notes).
    :func:`storage.repo.requests.stored_request` puts the full request back together; a row
    with ``prompt_id`` NULL holds its whole request in ``request`` (rows written before the
    normalisation and not converted, or requests without messages).
    """

    __tablename__ = "response"
    __table_args__ = (
        UniqueConstraint("run_id", "question_id", "condition", "sample", name="uq_response_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="generation_run.id", ondelete="CASCADE")
    question_id: int = Field(foreign_key="question.id", index=True)
    perturbation_id: int | None = Field(default=None, foreign_key="perturbation.id", index=True)
    condition: str = BASELINE_CONDITION
    condition_class: str = "none"
    sample: int = 0
    # Ids without a FOREIGN KEY clause: adding one to a populated SQLite table means
    # rebuilding it, and dropping the old table cascades into its step labels. Prompts and
    # parameters are never deleted, and only storage.repo.requests writes these ids.
    prompt_id: int | None = None
    params_id: int | None = None
    request: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    seed: int | None = None
    text: str | None = Field(default=None, sa_type=Text)
    # Stored as spans of ``text`` where a step is a substring of it (storage.step_spans);
    # a loaded row always shows the strings (see _unpack_steps below).
    steps: list[str] = Field(default_factory=list, sa_type=JSONType)
    answer: str | None = Field(default=None, sa_type=Text)
    parse_status: str = "pending"
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    error: str | None = Field(default=None, sa_type=Text)
    attempts: int = 0
    # Indexed: a request-cache entry written by generation finds its answer text here
    # instead of holding a copy (see llm.cache, "text_in").
    cache_key: str | None = Field(default=None, index=True)
    # Token logprobs (llm.logprobs.logprobs_to_json) when the request asked for them.
    logprobs: list[dict[str, Any]] | None = Field(default=None, sa_type=NullableJSONType)
    created_at: datetime = _created()
    updated_at: datetime = _updated()


def _unpack_steps(target: Response, *_: Any) -> None:
    """Give a loaded or refreshed response its steps as strings, whatever their stored form.

    The unpacked list becomes the attribute's committed value (no change to flush): an
    object written back through the ORM stores plain strings, which is valid stored form.
    """
    loaded = target.__dict__
    stored = loaded.get("steps")
    if not has_spans(stored):
        return
    # Expired attributes are reloaded together, so the text is there; a refresh of the
    # steps alone reads it (one query, only in that case).
    try:
        text = loaded["text"]
    except KeyError:
        text = target.text  # not loaded: read it now (never evaluated when it is)
    set_committed_value(target, "steps", unpack_steps(text, stored))


# restore_load_context: the text read above (refresh of the steps alone) is a load of its own.
event.listen(Response, "load", _unpack_steps, restore_load_context=True)
event.listen(Response, "refresh", _unpack_steps, restore_load_context=True)
