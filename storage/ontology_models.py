"""SQLModel tables of the ontology studio: versions, leaves, labelers, step labels, rounds."""

from datetime import datetime
from typing import Any

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# No `from __future__ import annotations`: SQLModel reads the annotations at class creation.
import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType, NullableJSONType, UTCDateTime
from storage.types import created_at_field as _created
from storage.types import updated_at_field as _updated

# Documented values of the enumerated string columns.
LABELER_KIND_VALUES = ("llm", "embed", "keywords", "sim")
UNMAPPED = "unmapped"
PROPOSAL_STATUS_VALUES = ("pending", "accepted", "rejected")
# Stored round states; "interrupted" is also derived when a "running" round's lease is dead.
ROUND_STATUS_VALUES = ("pending", "running", "interrupted", "incomplete", "done")


# --------------------------------------------------------------------------- ontology


class OntologyVersion(SQLModel, table=True):
    """An immutable ontology version; ``content`` is the full ontology document."""

    __tablename__ = "ontology_version"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_ontology_version_key"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    version: int = 1
    parent_id: int | None = Field(default=None, foreign_key="ontology_version.id", index=True)
    author: str | None = None
    note: str | None = Field(default=None, sa_type=Text)
    content: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    content_hash: str
    created_at: datetime = _created()


class OntologyLeaf(SQLModel, table=True):
    """One leaf symbol of an ontology version (denormalised from ``content`` for queries)."""

    __tablename__ = "ontology_leaf"
    __table_args__ = (
        UniqueConstraint("version_id", "leaf", name="uq_ontology_leaf_key"),
        UniqueConstraint("version_id", "symbol", name="uq_ontology_leaf_symbol"),
    )

    id: int | None = Field(default=None, primary_key=True)
    version_id: int = Field(foreign_key="ontology_version.id", index=True, ondelete="CASCADE")
    root: str
    leaf: str
    symbol: int
    definition: str = Field(default="", sa_type=Text)
    triggers: list[str] = Field(default_factory=list, sa_type=JSONType)
    exclusions: list[str] = Field(default_factory=list, sa_type=JSONType)
    examples: list[str] = Field(default_factory=list, sa_type=JSONType)


class LabelerSpec(SQLModel, table=True):
    """A labeler configuration; ``key`` is a hash of the spec so it is found again."""

    __tablename__ = "labeler_spec"

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(unique=True)
    name: str | None = None
    kind: str
    model: str | None = None
    temperature: float | None = None
    seed: int | None = None
    prompt_version: str = ""
    params: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()


class StepLabel(SQLModel, table=True):
    """The symbol one labeler assigned to one reasoning step under one ontology version."""

    __tablename__ = "step_label"
    __table_args__ = (
        UniqueConstraint(
            "response_id",
            "step_index",
            "labeler_id",
            "ontology_version_id",
            "repeat",
            name="uq_step_label_key",
        ),
    )

    # No single-column indexes on response_id, labeler_id or ontology_version_id: the unique
    # key leads with response_id and serves every lookup; the others were 3 of the 5
    # indexes written per step (a fifth of the database at scale) and never used alone.
    id: int | None = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", ondelete="CASCADE")
    step_index: int
    labeler_id: int = Field(foreign_key="labeler_spec.id")
    ontology_version_id: int = Field(foreign_key="ontology_version.id")
    repeat: int = 0
    round_id: int | None = Field(default=None, foreign_key="labeling_round.id", index=True)
    category: str
    symbol: str
    parse_status: str = "ok"
    raw_output: str | None = Field(default=None, sa_type=Text)
    # the LLM labeler's request settings (study/strict_json.judge_settings: model, prompt
    # version and hash, sampling, seed); None for other labelers and labels before 0013
    settings: dict[str, Any] | None = Field(default=None, sa_type=NullableJSONType)
    created_at: datetime = _created()


class LabelingRound(SQLModel, table=True):
    """One round of the ontology refinement loop."""

    __tablename__ = "labeling_round"

    id: int | None = Field(default=None, primary_key=True)
    number: int = Field(unique=True)
    ontology_version_id: int = Field(foreign_key="ontology_version.id", index=True)
    run_id: int = Field(foreign_key="generation_run.id", index=True)
    sample_size: int
    seed: int
    labelers: list[str] = Field(default_factory=list, sa_type=JSONType)
    status: str = "pending"
    metrics: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class RoundResponse(SQLModel, table=True):
    """A response sampled into a labeling round."""

    __tablename__ = "round_response"
    __table_args__ = (UniqueConstraint("round_id", "response_id", name="uq_round_response_key"),)

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="labeling_round.id", index=True, ondelete="CASCADE")
    response_id: int = Field(foreign_key="response.id", index=True)


class RewriteProposal(SQLModel, table=True):
    """An LLM rewrite of the two most-confused definitions, awaiting a researcher's decision."""

    __tablename__ = "rewrite_proposal"

    id: int | None = Field(default=None, primary_key=True)
    round_id: int | None = Field(default=None, foreign_key="labeling_round.id", index=True)
    leaf_a: str
    leaf_b: str
    # The version the proposal rewrites (the round's version); accepting applies it on top
    # of the newest version of that ontology. (No foreign key: see migration 0006.)
    base_version_id: int | None = Field(default=None, index=True)
    model: str | None = None
    request: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    raw_output: str | None = Field(default=None, sa_type=Text)
    def_a_old: str = Field(default="", sa_type=Text)
    def_b_old: str = Field(default="", sa_type=Text)
    def_a_new: str | None = Field(default=None, sa_type=Text)
    def_b_new: str | None = Field(default=None, sa_type=Text)
    evidence: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSONType)
    status: str = Field(default="pending", index=True)
    edited: bool = False
    resulting_version_id: int | None = Field(
        default=None, foreign_key="ontology_version.id", index=True
    )
    created_at: datetime = _created()
    decided_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
