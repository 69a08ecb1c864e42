"""SQLModel tables of the human studies in Label Studio: studies, tasks, annotators, answers."""

from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

# No `from __future__ import annotations`: SQLModel reads the annotations at class creation.
import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType, UTCDateTime
from storage.types import created_at_field as _created

# Documented values of the enumerated string columns.
STUDY_KIND_VALUES = (
    "question_checks",
    "persona_pair",
    "orthogonality",
    "label_check",
    "helpfulness",
    "distraction",
    "conflict_rubric",
    "bank_observability",
    "disposition_check",
    "test_awareness",
    "claim_check",
)


# ------------------------------------------------------------------ human studies (LS)


class Study(SQLModel, table=True):
    """A Label Studio project of one study kind (``name``: see ``STUDY_KIND_VALUES``)."""

    __tablename__ = "study"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    ls_project_id: int | None = Field(default=None, unique=True)
    ls_url: str | None = None
    title: str | None = None
    config_hash: str | None = None
    created_at: datetime = _created()


class StudyTask(SQLModel, table=True):
    """One task pushed to a study; ``external_key`` is our stable id for idempotent pushes."""

    __tablename__ = "study_task"
    __table_args__ = (UniqueConstraint("study_id", "external_key", name="uq_study_task_key"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    external_key: str
    ls_task_id: int | None = Field(default=None, index=True)
    payload: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()


class Annotator(SQLModel, table=True):
    """A Label Studio user."""

    __tablename__ = "annotator"

    id: int | None = Field(default=None, primary_key=True)
    ls_user_id: int = Field(unique=True)
    email: str | None = Field(default=None, index=True)
    created_at: datetime = _created()


class HumanAnnotation(SQLModel, table=True):
    """One Label Studio annotation, raw ``result`` kept; keyed on ``ls_annotation_id``."""

    __tablename__ = "human_annotation"

    id: int | None = Field(default=None, primary_key=True)
    study_task_id: int = Field(foreign_key="study_task.id", index=True)
    ls_annotation_id: int = Field(unique=True)
    annotator_id: int | None = Field(default=None, foreign_key="annotator.id", index=True)
    result: Any = Field(default_factory=list, sa_type=JSONType)
    lead_time: float | None = None
    ls_created_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    ls_updated_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    pulled_at: datetime = _created()
