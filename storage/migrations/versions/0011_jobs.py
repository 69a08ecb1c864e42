"""jobs: one row per long action run as a background process

Revision ID: 0011_jobs
Revises: 0010_step_spans
Create Date: 2026-12-01 23:50:00 UTC

The ``job`` table (storage/job_models.py): a ``driftlens …`` command started from a page
as a detached process, or from a shell, with its stage, ``(done, total)`` progress, state
and one-line error, so every page and the Jobs page can show it across reloads. A new
table only; nothing existing changes.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0011_jobs'
down_revision: str | None = '0010_step_spans'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    op.create_table('job',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(), nullable=False),
    sa.Column('title', sa.String(), nullable=False),
    sa.Column('argv', JSON_T, nullable=False),
    sa.Column('scope', JSON_T, nullable=False),
    sa.Column('origin', sa.String(), nullable=False),
    sa.Column('state', sa.String(), nullable=False),
    sa.Column('stage', sa.String(), nullable=False),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('unit', sa.String(), nullable=False),
    sa.Column('host', sa.String(), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('log_path', sa.String(), nullable=True),
    sa.Column('result', JSON_T, nullable=True),
    sa.Column('resumed_by', sa.Integer(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('stage_started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job'))
    )
    op.create_index(op.f('ix_job_kind'), 'job', ['kind'], unique=False)
    op.create_index(op.f('ix_job_state'), 'job', ['state'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_job_state'), table_name='job')
    op.drop_index(op.f('ix_job_kind'), table_name='job')
    op.drop_table('job')
