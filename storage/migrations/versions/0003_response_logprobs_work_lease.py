"""response logprobs and work leases

Revision ID: 0003_logprobs_lease
Revises: 0002_conflict_bank
Create Date: 2026-12-01 10:30:00 UTC

Additive only (issue 10): a nullable JSON ``response.logprobs`` (token logprobs of the
answer when the request asked for them) and the ``work_lease`` table, which lets a second
``driftlens generate`` on a run that a live process is generating refuse instead of
writing alongside it.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0003_logprobs_lease'
down_revision: str | None = '0002_conflict_bank'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# JSON on SQLite, JSONB on PostgreSQL (storage.types.json_type).
JSON_T = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('response') as batch:
        batch.add_column(sa.Column('logprobs', JSON_T, nullable=True))
    op.create_table('work_lease',
    sa.Column('key', sa.String(), nullable=False),
    sa.Column('host', sa.String(), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=False),
    sa.Column('token', sa.String(), nullable=False),
    sa.Column('acquired_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_work_lease'))
    )


def downgrade() -> None:
    op.drop_table('work_lease')
    with op.batch_alter_table('response') as batch:
        batch.drop_column('logprobs')
