"""conflict_bank: memory-bank instances of the conflicts instrument

Revision ID: 0002_conflict_bank
Revises: 0001_initial
Create Date: 2026-12-01 10:40:00 UTC

One new table; nothing existing changes, so upgrading a populated database only adds it.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0002_conflict_bank'
down_revision: str | None = '0001_initial'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    op.create_table('conflict_bank',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('instance_id', sa.String(), nullable=False),
    sa.Column('question_id', sa.Integer(), nullable=False),
    sa.Column('conflict_type', sa.String(), nullable=False),
    sa.Column('high_risk', sa.Boolean(), nullable=False),
    sa.Column('source', sa.String(), nullable=True),
    sa.Column('content', JSON_T, nullable=False),
    sa.Column('content_hash', sa.String(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['question_id'], ['question.id'], name=op.f('fk_conflict_bank_question_id_question')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_conflict_bank')),
    sa.UniqueConstraint('instance_id', name=op.f('uq_conflict_bank_instance_id'))
    )
    op.create_index(op.f('ix_conflict_bank_question_id'), 'conflict_bank', ['question_id'], unique=False)
    op.create_index(op.f('ix_conflict_bank_conflict_type'), 'conflict_bank', ['conflict_type'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_conflict_bank_conflict_type'), table_name='conflict_bank')
    op.drop_index(op.f('ix_conflict_bank_question_id'), table_name='conflict_bank')
    op.drop_table('conflict_bank')
