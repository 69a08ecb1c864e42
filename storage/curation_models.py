"""SQLModel tables of benchmark curation: questions and their curation votes."""

from datetime import datetime

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# No `from __future__ import annotations`: SQLModel reads the annotations at class creation.
import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType, NullableJSONType
from storage.types import created_at_field as _created
from storage.types import updated_at_field as _updated

# Documented values of the enumerated string columns.
TIER_VALUES = ("core", "relaxed")
FILTER_LABEL_VALUES = ("ACCEPT", "REJECT")
VOTE_VALUES = ("yes", "no", "unsure")
VOTE_SOURCE_VALUES = ("labelstudio", "import")


# --------------------------------------------------------------------------- curation


class Question(SQLModel, table=True):
    """A benchmark question (candidate until it has a tier)."""

    __tablename__ = "question"

    id: int | None = Field(default=None, primary_key=True)
    external_id: str = Field(unique=True)
    text: str = Field(sa_type=Text)
    source: str | None = None
    domains: list[str] = Field(default_factory=list, sa_type=JSONType)
    tier: str | None = Field(default=None, index=True)
    filter_label: str | None = Field(default=None, index=True)
    filter_reason: str | None = Field(default=None, sa_type=Text)
    filter_domains: list[str] | None = Field(default=None, sa_type=NullableJSONType)
    filter_model: str | None = None
    filter_error: str | None = Field(default=None, sa_type=Text)
    filter_raw: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class CurationVote(SQLModel, table=True):
    """One annotator's Yes/No/Unsure on one verification criterion of one question."""

    __tablename__ = "curation_vote"
    __table_args__ = (
        UniqueConstraint("question_id", "criterion", "annotator", name="uq_curation_vote_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    question_id: int = Field(foreign_key="question.id", index=True)
    criterion: str
    annotator: str
    vote: str
    source: str = "labelstudio"
    human_annotation_id: int | None = Field(
        default=None, foreign_key="human_annotation.id", index=True
    )
    created_at: datetime = _created()
    updated_at: datetime = _updated()
