"""SQLModel tables of the source-reliance instrument (runs and their probes).

Kept apart from the reasoning-drift tables for the reason the disposition tables are: a
multiple-choice item is not a benchmark ``Question`` (it must never enter that pipeline's
plans), and a probe carries what ``Response`` has no place for — the variant, the fixed
wrong option, the letter distribution and how it was read. Imported by
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

#: ``ok``: a letter was read; ``unknown``: the reply held no option letter (uniform
#: distribution, counted); ``failed``: the request failed (re-asked when the run resumes).
SOURCE_PROBE_STATUS_VALUES = ("ok", "unknown", "failed")
#: Flags of a probe whose reply was answered but not in the expected shape.
SOURCE_PROBE_FLAG_VALUES = ("no_logprobs", "not_a_letter", "letters_outside_topk")
SOURCE_RUN_STATUS_VALUES = ("running", "interrupted", "incomplete", "done")
#: ``tier`` of the bare probes, which no assertion tier applies to (a real value, not
#: NULL, so the unique key holds on every backend).
NO_TIER = 0


class SourceRun(SQLModel, table=True):
    """One source-reliance run: a model, its items and how they were asked.

    ``config`` holds the items (ids and a hash of their content), every
    :class:`study.sources.plan.SourcesConfig` (one per system instruction) and the hash of
    the tier-2 claims, so a resumed run can refuse different settings.
    """

    __tablename__ = "source_run"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    model: str
    simulated: bool = False
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    status: str = "running"
    created_at: datetime = created_at_field()
    updated_at: datetime = updated_at_field()


class SourceProbe(SQLModel, table=True):
    """The answer of one probe: the letter, its distribution and every raw logprob.

    ``UNIQUE(run_id, instruction, tier, item_id, variant)`` keeps resumed runs free of
    duplicates (its leading ``run_id`` also serves every per-run query).
    """

    __tablename__ = "source_probe"
    __table_args__ = (
        UniqueConstraint(
            "run_id", "instruction", "tier", "item_id", "variant", name="uq_source_probe_key"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="source_run.id", ondelete="CASCADE")
    instruction: str = "n"
    tier: int = NO_TIER
    item_id: str
    dataset: str
    variant: str
    ordering: str = ""
    correct_letter: str
    wrong_letter: str = ""
    choice: str = "unknown"
    method: str = "none"
    status: str = "ok"
    flags: list[str] = Field(default_factory=list, sa_type=JSONType)
    # {letter: probability} (sums to 1), NULL when the letter was read from the text.
    probs: dict[str, float] | None = Field(default=None, sa_type=NullableJSONType)
    captured_mass: float | None = None
    missing: list[str] = Field(default_factory=list, sa_type=JSONType)
    generated: str | None = None
    # The raw [token, logprob] list at the answer position.
    top: list[Any] = Field(default_factory=list, sa_type=JSONType)
    text: str | None = Field(default=None, sa_type=Text)
    error: str | None = Field(default=None, sa_type=Text)
    reasoning: str | None = Field(default=None, sa_type=Text)
    # The messages, normalised as for Response (storage.repo.requests); no FOREIGN KEY
    # clause for the same reason.
    prompt_id: int | None = None
    cache_key: str | None = None
    cached: bool = False
    # Every token's logprobs (llm.logprobs.logprobs_to_json) when they were asked for.
    logprobs: list[dict[str, Any]] | None = Field(default=None, sa_type=NullableJSONType)
    created_at: datetime = created_at_field()
    updated_at: datetime = updated_at_field()


#: Where a stored claim came from.
SOURCE_CLAIM_ORIGIN_VALUES = ("generated", "imported")


class SourceClaim(SQLModel, table=True):
    """One tier-2 contextual claim of a named claim set (one per item).

    ``UNIQUE(claim_set, item_id)``: importing a reviewed file into the same set replaces
    its claims item by item.
    """

    __tablename__ = "source_claim"
    __table_args__ = (UniqueConstraint("claim_set", "item_id", name="uq_source_claim_key"),)

    id: int | None = Field(default=None, primary_key=True)
    claim_set: str
    item_id: str
    claim: str = Field(sa_type=Text)
    # The model that wrote it, and the prompt (study.sources.tier2.PROMPT_ID); for an
    # imported claim the model named in the file, if any.
    writer: str | None = None
    prompt: str | None = None
    origin: str = "generated"
    # The imported file's path (None for generated claims).
    source: str | None = Field(default=None, sa_type=Text)
    # the writer's request settings (study/strict_json.judge_settings); None for imported
    # claims and claims stored before 0013
    settings: dict[str, Any] | None = Field(default=None, sa_type=NullableJSONType)
    created_at: datetime = created_at_field()
    updated_at: datetime = updated_at_field()
