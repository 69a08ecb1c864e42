"""SQLModel tables of the memory-conflict instrument (its rendered banks)."""

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

# No `from __future__ import annotations`: SQLModel reads the annotations at class creation.
import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType
from storage.types import created_at_field as _created
from storage.types import updated_at_field as _updated

# --------------------------------------------------------------------- memory conflicts


class ConflictBank(SQLModel, table=True):
    """One memory-bank instance of the conflicts instrument (study/conflicts/items.py).

    ``content`` is the validated instance (memories, request, provenance) exactly as
    imported; ``question_id`` is the ``Question`` row holding its request, so generation
    runs and responses key on it like any question.
    """

    __tablename__ = "conflict_bank"

    id: int | None = Field(default=None, primary_key=True)
    instance_id: str = Field(unique=True)
    question_id: int = Field(foreign_key="question.id", index=True)
    conflict_type: str = Field(index=True)
    high_risk: bool = False
    source: str | None = None
    content: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    content_hash: str
    created_at: datetime = _created()
    updated_at: datetime = _updated()
