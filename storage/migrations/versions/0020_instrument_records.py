"""generic instrument store: runs and keyed records any instrument may keep

Revision ID: 0020_instrument_records
Revises: 0017_model_roles
Create Date: 2026-12-06 04:20:00 UTC

Two new tables (storage/instrument_models.py, issue 33): ``instrument_run`` (one named run
of one instrument: its model, settings, status) and ``instrument_record`` (one answered unit
of a run, unique on ``(run_id, item, unit)`` so a resumed run adds no duplicate). An
instrument from another package stores through them: it cannot add a revision of its own.
New tables only; nothing existing changes.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020_instrument_records"
down_revision: str | None = "0017_model_roles"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "instrument_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("instrument", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("config", JSON_T, nullable=False),
        sa.Column("simulated", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instrument_run")),
        sa.UniqueConstraint("instrument", "name", name="uq_instrument_run_key"),
    )
    op.create_index(
        op.f("ix_instrument_run_instrument"), "instrument_run", ["instrument"], unique=False
    )
    op.create_table(
        "instrument_record",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("item", sa.String(), nullable=False),
        sa.Column("unit", sa.String(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("data", JSON_T, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["instrument_run.id"],
            name=op.f("fk_instrument_record_run_id_instrument_run"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instrument_record")),
        sa.UniqueConstraint("run_id", "item", "unit", name="uq_instrument_record_key"),
    )


def downgrade() -> None:
    op.drop_table("instrument_record")
    op.drop_index(op.f("ix_instrument_run_instrument"), table_name="instrument_run")
    op.drop_table("instrument_run")
