"""model roles: which model judged, labeled or classified each run

Revision ID: 0017_model_roles
Revises: 0015_refinement_loop
Create Date: 2026-12-06 04:10:00 UTC

One new table (storage/role_models.py, issue 36 item 5): ``model_role``, one row per
(scope, run, role, model) with the run's model under test and whether self-judging
was allowed. New table only; nothing existing changes.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_model_roles"
down_revision: str | None = "0015_refinement_loop"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "model_role",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(), nullable=False),
        sa.Column("run", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("model_under_test", sa.String(), nullable=True),
        sa.Column("self_judging", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_role")),
        sa.UniqueConstraint("scope", "run", "role", "model", name="uq_model_role_key"),
    )
    op.create_index(op.f("ix_model_role_scope"), "model_role", ["scope"], unique=False)
    op.create_index(op.f("ix_model_role_run"), "model_role", ["run"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_model_role_run"), table_name="model_role")
    op.drop_index(op.f("ix_model_role_scope"), table_name="model_role")
    op.drop_table("model_role")
