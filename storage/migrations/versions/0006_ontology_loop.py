"""ontology loop: proposal base version, page drafts

Revision ID: 0006_ontology_loop
Revises: 0005_normalised_requests
Create Date: 2026-12-01 10:30:00 UTC

* ``rewrite_proposal.base_version_id``: the version a proposal rewrites (backfilled from
  the ``ontology_version_id`` its request recorded), so accepting it after a newer version
  exists re-applies it on top of the newest instead of reverting the newer work.
* ``draft``: unsaved page edits (rewrite edit boxes, the YAML editor), keyed by page and
  object, so they survive navigation and reloads.

(Rounds in progress hold a ``work_lease`` row of revision 0003: a round whose process is
gone is interrupted.)
"""
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql

revision: str = '0006_ontology_loop'
down_revision: str | None = '0005_normalised_requests'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    # A plain indexed column, no foreign key: SQLite can add a constrained column only by
    # copying the table (batch mode), which the offline --sql mode cannot do.
    op.add_column('rewrite_proposal', sa.Column('base_version_id', sa.Integer(), nullable=True))
    op.create_index(
        op.f('ix_rewrite_proposal_base_version_id'),
        'rewrite_proposal',
        ['base_version_id'],
        unique=False,
    )
    if not context.is_offline_mode():
        _backfill_base_versions()

    op.create_table('draft',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('page', sa.String(), nullable=False),
    sa.Column('object_key', sa.String(), nullable=False),
    sa.Column('fields', JSON_T, nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_draft')),
    sa.UniqueConstraint('page', 'object_key', name='uq_draft_key')
    )


def _backfill_base_versions() -> None:
    """Existing proposals: the base is the version their request recorded."""
    conn = op.get_bind()
    rows = conn.execute(sa.text('SELECT id, request FROM rewrite_proposal')).all()
    for pid, request in rows:
        data = json.loads(request) if isinstance(request, str) else (request or {})
        base = data.get('ontology_version_id')
        if base is not None:
            conn.execute(
                sa.text('UPDATE rewrite_proposal SET base_version_id = :b WHERE id = :i'),
                {'b': int(base), 'i': pid},
            )


def downgrade() -> None:
    op.drop_table('draft')
    op.drop_index(op.f('ix_rewrite_proposal_base_version_id'), table_name='rewrite_proposal')
    with op.batch_alter_table('rewrite_proposal') as batch:
        batch.drop_column('base_version_id')
