"""SQLModel tables of the infrastructure: request cache, work leases, drafts, workspace meta."""

from datetime import datetime
from typing import Any

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# No `from __future__ import annotations`: SQLModel reads the annotations at class creation.
import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType
from storage.types import created_at_field as _created
from storage.types import updated_at_field as _updated

# ---------------------------------------------------------------------- infrastructure


class LLMCacheEntry(SQLModel, table=True):
    """A cached LLM request/response, keyed by sha256 of (model, endpoint, messages, params).

    The request payload is stored normalised like :class:`Response`'s (``prompt_id``,
    ``params_id``, the rest in ``request``); :func:`storage.repo.requests.cache_request`
    returns it whole. An entry written by generation does not copy the answer text the
    response row holds: its ``response`` has ``"text_in": "response"`` instead of
    ``"text"``; :func:`storage.repo.cache.cache_response` returns it whole.
    """

    __tablename__ = "llm_cache_entry"

    key: str = Field(primary_key=True)
    provider: str
    endpoint: str | None = None
    model: str
    prompt_id: int | None = None  # no FOREIGN KEY clause: see Response
    params_id: int | None = None
    request: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    response: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()
    hits: int = 0


class WorkLease(SQLModel, table=True):
    """Who is doing a piece of work now (e.g. generating a run), so a second process refuses.

    ``key`` names the work (``generation_run:<id>``). A lease is held while its holder
    lives: on the same host the holder's pid must exist, elsewhere its ``heartbeat_at``
    must be recent; a dead holder's lease is taken over (see ``storage.repo.leases``).
    """

    __tablename__ = "work_lease"

    key: str = Field(primary_key=True)
    host: str
    pid: int
    token: str
    acquired_at: datetime = _created()
    heartbeat_at: datetime = _created()


class Draft(SQLModel, table=True):
    """Unsaved edits of a page (edit boxes, the YAML editor), kept until saved or discarded.

    ``page`` and ``object_key`` say where the draft belongs (e.g. ``rewrite`` /
    ``proposal-3``); ``fields`` maps widget names to their text.
    """

    __tablename__ = "draft"
    __table_args__ = (UniqueConstraint("page", "object_key", name="uq_draft_key"),)

    id: int | None = Field(default=None, primary_key=True)
    page: str
    object_key: str
    fields: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    updated_at: datetime = _updated()


class WorkspaceMeta(SQLModel, table=True):
    """Free key/value metadata about the workspace (never secrets)."""

    __tablename__ = "workspace_meta"

    key: str = Field(primary_key=True)
    value: str = Field(default="", sa_type=Text)
    updated_at: datetime = _updated()
