"""judge settings stored with every other judge's verdict

Revision ID: 0013_judge_settings_everywhere
Revises: 0012_judge_settings
Create Date: 2026-12-02 05:50:00 UTC

Additive only (issue 22, item 1, after 0012 did it for ``judge_score``): a nullable JSON
``settings`` (model, prompt version and hash, sampling, seed of the request; see
study/strict_json.judge_settings) on the verdicts of the other judges:
``disposition_score`` (category classifier, graded review, test-awareness judge),
``step_label`` (the LLM step labeler; other labelers leave it null) and ``source_claim``
(the tier-2 claim writer). Rows stored before it have none (``null``: unknown).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013_judge_settings_everywhere"
down_revision: str | None = "0012_judge_settings"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
TABLES = ("disposition_score", "step_label", "source_claim")


def upgrade() -> None:
    for name in TABLES:
        with op.batch_alter_table(name) as batch:
            batch.add_column(sa.Column("settings", JSON_T, nullable=True))


def downgrade() -> None:
    for name in reversed(TABLES):
        with op.batch_alter_table(name) as batch:
            batch.drop_column("settings")
