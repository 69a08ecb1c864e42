"""source-reliance tier-2 claims

Revision ID: 0009_source_claims
Revises: 0008_source_runs
Create Date: 2026-12-01 17:20:00 UTC

Tier-2 contextual claims of the source-reliance instrument stored in the database
(``source_claim``, storage/source_models.py): one row per (claim set, item), written by
``driftlens sources claims`` or imported from a reviewed JSONL file. A new table only;
nothing existing changes.

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0009_source_claims'
down_revision: str | None = '0008_source_runs'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('source_claim',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('claim_set', sa.String(), nullable=False),
    sa.Column('item_id', sa.String(), nullable=False),
    sa.Column('claim', sa.Text(), nullable=False),
    sa.Column('writer', sa.String(), nullable=True),
    sa.Column('prompt', sa.String(), nullable=True),
    sa.Column('origin', sa.String(), nullable=False),
    sa.Column('source', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_source_claim')),
    sa.UniqueConstraint('claim_set', 'item_id', name='uq_source_claim_key')
    )


def downgrade() -> None:
    op.drop_table('source_claim')
