"""SQLModel tables of judge scores and stored analyses."""

from datetime import datetime
from typing import Any

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# No `from __future__ import annotations`: SQLModel reads the annotations at class creation.
import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType, NullableJSONType
from storage.types import created_at_field as _created

# Documented values of the enumerated string columns.
JUDGE_KIND_VALUES = ("helpfulness", "distraction", "acknowledgement")


# ------------------------------------------------------------------ judges & analyses


class JudgeScore(SQLModel, table=True):
    """An LLM judge's score of a response (helpfulness 0–4, distraction, acknowledgement)."""

    __tablename__ = "judge_score"
    __table_args__ = (
        UniqueConstraint("response_id", "judge_model", "kind", name="uq_judge_score_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", index=True, ondelete="CASCADE")
    judge_model: str
    kind: str
    value: float | None = None
    raw_output: str | None = Field(default=None, sa_type=Text)
    parse_status: str = "ok"
    # model, prompt version and hash, sampling and seed of the judging request
    # (study/strict_json.judge_settings); None for verdicts stored before 0012
    settings: dict[str, Any] | None = Field(default=None, sa_type=NullableJSONType)
    created_at: datetime = _created()


class Analysis(SQLModel, table=True):
    """A drift analysis of one run under one labeler and ontology version."""

    __tablename__ = "analysis"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="generation_run.id", index=True)
    labeler_id: int = Field(foreign_key="labeler_spec.id", index=True)
    ontology_version_id: int = Field(foreign_key="ontology_version.id", index=True)
    out_dir: str | None = None
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    result: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    implementation: str = ""
    created_at: datetime = _created()
