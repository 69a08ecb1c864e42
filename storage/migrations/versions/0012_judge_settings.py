"""judge settings stored with each verdict

Revision ID: 0012_judge_settings
Revises: 0011_jobs
Create Date: 2026-12-02 01:05:00 UTC

Additive only (issue 22, item 1): a nullable JSON ``judge_score.settings`` holding the
judge's model, prompt version and hash, sampling (temperature, top_p, max_tokens) and
seed of the request that produced the verdict. Verdicts stored before it have none
(``null``: settings unknown).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012_judge_settings"
down_revision: str | None = "0011_jobs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("judge_score") as batch:
        batch.add_column(sa.Column("settings", JSON_T, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("judge_score") as batch:
        batch.drop_column("settings")
