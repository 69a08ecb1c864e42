"""source-reliance runs and probes

Revision ID: 0008_source_runs
Revises: 0007_shared_texts
Create Date: 2026-12-01 17:00:00 UTC

The source-reliance instrument's stored runs (storage/source_models.py): one
``source_run`` row per run (model, items, settings) and one ``source_probe`` row per
answered probe (letter, letter distribution, raw logprobs, cache key, status). New tables
only; nothing existing changes. JSON columns are JSONB on PostgreSQL as in 0001; the
nullable ones store Python ``None`` as SQL NULL, as ``response.logprobs`` does (0003).

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0008_source_runs'
down_revision: str | None = '0007_shared_texts'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# JSON on SQLite, JSONB on PostgreSQL (storage.types.json_type).
JSON_T = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')
NULLABLE_JSON_T = sa.JSON(none_as_null=True).with_variant(
    postgresql.JSONB(none_as_null=True), 'postgresql'
)


def upgrade() -> None:
    op.create_table('source_run',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('simulated', sa.Boolean(), nullable=False),
    sa.Column('config', JSON_T, nullable=False),
    sa.Column('status', sa.String(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_source_run')),
    sa.UniqueConstraint('name', name=op.f('uq_source_run_name'))
    )
    op.create_table('source_probe',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('instruction', sa.String(), nullable=False),
    sa.Column('tier', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.String(), nullable=False),
    sa.Column('dataset', sa.String(), nullable=False),
    sa.Column('variant', sa.String(), nullable=False),
    sa.Column('ordering', sa.String(), nullable=False),
    sa.Column('correct_letter', sa.String(), nullable=False),
    sa.Column('wrong_letter', sa.String(), nullable=False),
    sa.Column('choice', sa.String(), nullable=False),
    sa.Column('method', sa.String(), nullable=False),
    sa.Column('status', sa.String(), nullable=False),
    sa.Column('flags', JSON_T, nullable=False),
    sa.Column('probs', NULLABLE_JSON_T, nullable=True),
    sa.Column('captured_mass', sa.Float(), nullable=True),
    sa.Column('missing', JSON_T, nullable=False),
    sa.Column('generated', sa.String(), nullable=True),
    sa.Column('top', JSON_T, nullable=False),
    sa.Column('text', sa.Text(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('reasoning', sa.Text(), nullable=True),
    sa.Column('prompt_id', sa.Integer(), nullable=True),
    sa.Column('cache_key', sa.String(), nullable=True),
    sa.Column('cached', sa.Boolean(), nullable=False),
    sa.Column('logprobs', NULLABLE_JSON_T, nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['source_run.id'], name=op.f('fk_source_probe_run_id_source_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_source_probe')),
    sa.UniqueConstraint('run_id', 'instruction', 'tier', 'item_id', 'variant', name='uq_source_probe_key')
    )


def downgrade() -> None:
    op.drop_table('source_probe')
    op.drop_table('source_run')
