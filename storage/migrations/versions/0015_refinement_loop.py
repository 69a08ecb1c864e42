"""refinement loop: loops, their rounds and their gated decisions

Revision ID: 0015_refinement_loop
Revises: 0014_disposition_position
Create Date: 2026-12-06 01:00:00 UTC

Three new tables (storage/refinement_models.py, issue 34): ``refinement_loop`` (one
``driftlens ontology refine`` loop: options, key, status, stop reason, current version),
``refinement_round`` (the labeling round of each iteration with its agreement) and
``refinement_decision`` (each gated rewrite proposal: evidence, held-out ids, gate
statistics, reasons, the version it created). New tables only; nothing existing changes.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015_refinement_loop"
down_revision: str | None = "0014_disposition_position"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "refinement_loop",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("config", JSON_T, nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("stop_reason", sa.String(), nullable=True),
        sa.Column("start_version_id", sa.Integer(), nullable=False),
        sa.Column("current_version_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refinement_loop")),
    )
    op.create_index(op.f("ix_refinement_loop_key"), "refinement_loop", ["key"], unique=True)
    op.create_index(op.f("ix_refinement_loop_status"), "refinement_loop", ["status"], unique=False)
    op.create_table(
        "refinement_round",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("loop_id", sa.Integer(), nullable=False),
        sa.Column("iteration", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("metrics", JSON_T, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["loop_id"],
            ["refinement_loop.id"],
            name=op.f("fk_refinement_round_loop_id_refinement_loop"),
        ),
        sa.ForeignKeyConstraint(
            ["round_id"],
            ["labeling_round.id"],
            name=op.f("fk_refinement_round_round_id_labeling_round"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refinement_round")),
        sa.UniqueConstraint("loop_id", "iteration", name="uq_refinement_round_key"),
    )
    op.create_index(
        op.f("ix_refinement_round_loop_id"), "refinement_round", ["loop_id"], unique=False
    )
    op.create_table(
        "refinement_decision",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("loop_id", sa.Integer(), nullable=False),
        sa.Column("iteration", sa.Integer(), nullable=False),
        sa.Column("leaf_a", sa.String(), nullable=False),
        sa.Column("leaf_b", sa.String(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("proposal_id", sa.Integer(), nullable=True),
        sa.Column("evidence_ids", JSON_T, nullable=False),
        sa.Column("heldout_ids", JSON_T, nullable=False),
        sa.Column("control_ids", JSON_T, nullable=False),
        sa.Column("gate", JSON_T, nullable=False),
        sa.Column("decision", sa.String(), nullable=False),
        sa.Column("reasons", JSON_T, nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["loop_id"],
            ["refinement_loop.id"],
            name=op.f("fk_refinement_decision_loop_id_refinement_loop"),
        ),
        sa.ForeignKeyConstraint(
            ["proposal_id"],
            ["rewrite_proposal.id"],
            name=op.f("fk_refinement_decision_proposal_id_rewrite_proposal"),
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["ontology_version.id"],
            name=op.f("fk_refinement_decision_version_id_ontology_version"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refinement_decision")),
        sa.UniqueConstraint(
            "loop_id", "iteration", "leaf_a", "leaf_b", "attempt", name="uq_refinement_decision_key"
        ),
    )
    op.create_index(
        op.f("ix_refinement_decision_loop_id"), "refinement_decision", ["loop_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_refinement_decision_loop_id"), table_name="refinement_decision")
    op.drop_table("refinement_decision")
    op.drop_index(op.f("ix_refinement_round_loop_id"), table_name="refinement_round")
    op.drop_table("refinement_round")
    op.drop_index(op.f("ix_refinement_loop_status"), table_name="refinement_loop")
    op.drop_index(op.f("ix_refinement_loop_key"), table_name="refinement_loop")
    op.drop_table("refinement_loop")
