"""Tables of the refinement loop (``driftlens ontology refine``): loops, their rounds, decisions.

A loop row holds its options and where it stands; ``key`` (a digest of the options) lets
the same command find and resume it. Each iteration's labeling round is a
``refinement_round`` row; each gated rewrite proposal is a ``refinement_decision`` row with
its evidence, held-out ids, gate statistics, reasons and the version it created.
Unique keys make a resumed loop's writes idempotent. Imported by :mod:`storage.models`.

No ``from __future__ import annotations`` here: SQLModel reads the annotations at class
creation time.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType, UTCDateTime, created_at_field, utcnow

#: ``running`` (or interrupted: resumed by running the same command), ``done``.
LOOP_STATUS_VALUES = ("running", "done")
#: Why a loop stopped.
STOP_REASON_VALUES = ("target", "plateau", "round_limit")


class RefinementLoop(SQLModel, table=True):
    """One refinement loop: its options, current version and (once ended) why it stopped."""

    __tablename__ = "refinement_loop"

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(index=True, unique=True)
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    status: str = Field(default="running", index=True)
    stop_reason: str | None = None
    start_version_id: int
    current_version_id: int
    created_at: datetime = created_at_field()
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class RefinementRound(SQLModel, table=True):
    """The labeling round of one iteration of a loop, with the agreement it measured."""

    __tablename__ = "refinement_round"
    __table_args__ = (UniqueConstraint("loop_id", "iteration", name="uq_refinement_round_key"),)

    id: int | None = Field(default=None, primary_key=True)
    loop_id: int = Field(foreign_key="refinement_loop.id", index=True)
    iteration: int
    round_id: int = Field(foreign_key="labeling_round.id")
    version_id: int
    metrics: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = created_at_field()


class RefinementDecision(SQLModel, table=True):
    """One gated rewrite proposal: evidence, held-out steps, gate statistics, the decision."""

    __tablename__ = "refinement_decision"
    __table_args__ = (
        UniqueConstraint(
            "loop_id", "iteration", "leaf_a", "leaf_b", "attempt", name="uq_refinement_decision_key"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    loop_id: int = Field(foreign_key="refinement_loop.id", index=True)
    iteration: int
    leaf_a: str
    leaf_b: str
    attempt: int = 0
    proposal_id: int | None = Field(default=None, foreign_key="rewrite_proposal.id")
    evidence_ids: list[Any] = Field(default_factory=list, sa_type=JSONType)
    heldout_ids: list[Any] = Field(default_factory=list, sa_type=JSONType)
    control_ids: list[Any] = Field(default_factory=list, sa_type=JSONType)
    gate: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    #: ``accepted`` / ``rejected`` (the gate's decision) / ``unparseable`` (no proposal)
    decision: str = "rejected"
    reasons: list[Any] = Field(default_factory=list, sa_type=JSONType)
    version_id: int | None = Field(default=None, foreign_key="ontology_version.id")
    created_at: datetime = created_at_field()
