"""SQLModel tables of the disposition instrument (arms, probe responses, classifier scores).

Kept apart from the reasoning-drift tables on purpose: a stem is not a benchmark
``Question`` (it must never enter that pipeline's plans), and a probe response carries
re-ask and reasoning bookkeeping the ``Response`` table has no place for. Imported by
:mod:`storage.models`, so the metadata Alembic compares holds them.

No ``from __future__ import annotations`` here: SQLModel reads the annotations at class
creation time.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Field, SQLModel

import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType, NullableJSONType, created_at_field, updated_at_field

ARM_ROLE_VALUES = ("reference", "control", "treatment")
REASONING_VALUES = ("on", "off", "budget", "filler")
DISPOSITION_STATUS_VALUES = ("ok", "exhausted", "error")
DISPOSITION_SCORE_KINDS = ("category", "graded", "awareness")


# the shared column definitions (storage/types.py), under the names the tables use
_created = created_at_field
_updated = updated_at_field


class DispositionArm(SQLModel, table=True):
    """One arm: a model with its recorded metadata, generated as one run of probes."""

    __tablename__ = "disposition_arm"
    __table_args__ = (UniqueConstraint("study", "name", name="uq_disposition_arm_key"),)

    id: int | None = Field(default=None, primary_key=True)
    study: str = Field(index=True)
    name: str
    model: str
    role: str = "treatment"
    dose: float | None = None
    train_seed: int | None = None
    training_set_hash: str | None = None
    reasoning: str = "on"
    budget: int | None = None
    filler: str | None = None
    server_instance: str | None = None
    samples: int = 2
    max_reasks: int = 3
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class DispositionResponse(SQLModel, table=True):
    """The final answer of one arm to one probe sample (after re-asks)."""

    __tablename__ = "disposition_response"
    __table_args__ = (
        UniqueConstraint(
            "arm_id", "battery", "stem", "paraphrase", "sample", name="uq_disposition_response_key"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    arm_id: int = Field(foreign_key="disposition_arm.id", index=True, ondelete="CASCADE")
    battery: str = Field(index=True)
    stem: str
    paraphrase: int
    sample: int
    # index in the arm's plan (None: stored before 0014, read in id order)
    position: int | None = None
    probe_text: str = Field(sa_type=Text)
    text: str | None = Field(default=None, sa_type=Text)
    answer: str | None = Field(default=None, sa_type=Text)
    finish_reason: str | None = None
    status: str = "ok"
    attempts: int = 0
    exhausted_attempts: int = 0
    reasoning_block: bool = False
    reasoning_words: int | None = None
    truncated: bool = False
    route: str | None = None
    request: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    cache_key: str | None = None
    error: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class DispositionScore(SQLModel, table=True):
    """A classifier category (or graded / awareness score) of one response; ``repeat`` > 0
    is the same response scored again (the classifier share of the noise)."""

    __tablename__ = "disposition_score"
    __table_args__ = (
        UniqueConstraint(
            "response_id", "kind", "repeat", "judge_model", name="uq_disposition_score_key"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="disposition_response.id", index=True, ondelete="CASCADE")
    kind: str = "category"
    repeat: int = 0
    judge_model: str
    label: str | None = None
    value: float | None = None
    stance_clear: bool | None = None
    raw_output: str | None = Field(default=None, sa_type=Text)
    parse_status: str = "ok"
    # model, prompt version and hash, sampling and seed of the judging request
    # (study/strict_json.judge_settings); None for scores stored before 0013
    settings: dict[str, Any] | None = Field(default=None, sa_type=NullableJSONType)
    created_at: datetime = _created()
