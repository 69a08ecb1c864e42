"""a disposition response's place in its arm's plan

Revision ID: 0014_disposition_position
Revises: 0013_judge_settings_everywhere
Create Date: 2026-12-02 16:30:00 UTC

Additive only (issue 24, the sharded ``disposition run``): a nullable integer ``position``
on ``disposition_response``, the response's index in its arm's plan (probe by probe,
sample by sample). A study's responses are read in (arm, position) order, so its tables
and statistics do not depend on the order the answers were stored in (one process, or
shards in parallel). Rows stored before it have none (``null``) and are read in id order,
as before, so a study stored before it reads as it did.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_disposition_position"
down_revision: str | None = "0013_judge_settings_everywhere"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, never a batch rebuild: rebuilding disposition_response on SQLite
# would drop the old table and, through ON DELETE CASCADE, every score of its responses.
# SQLite >= 3.35 adds and drops a plain column in place.


def upgrade() -> None:
    op.add_column("disposition_response", sa.Column("position", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("disposition_response", "position")
