"""normalised requests: prompts and shared request parameters stored once

Revision ID: 0005_normalised_requests
Revises: 0004_disposition
Create Date: 2026-12-01 10:40:00 UTC

Every response and every cache entry stored its whole request: the same rendered prompt
(about 700 bytes) and the same sampling parameters over and over. This revision adds
``prompt`` and ``request_params`` (each row once, keyed by the sha256 of its canonical
JSON), points ``response`` and ``llm_cache_entry`` at them, and keeps in ``request`` only
what is each request's own (its seed, parse notes). The existing rows are converted in
place, in batches; rows already converted are skipped, so running the conversion again
changes nothing. The split is a frozen copy of ``storage.repo.requests.split_request``
(a revision must not import application code that may change later); the test
``tests/storage/test_request_migration.py`` checks that both agree.

It also drops indexes that only cost space and write time: ``ix_response_run_id`` (the
unique key leads with ``run_id``), ``ix_response_cache_key`` (never queried),
``ix_step_label_response_id`` (the unique key leads with ``response_id``),
``ix_step_label_labeler_id`` and ``ix_step_label_ontology_version_id`` (never used alone).

Downgrade puts every request back together and restores the old layout.
"""
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql, sqlite

# revision identifiers, used by Alembic.
revision: str = '0005_normalised_requests'
down_revision: str | None = '0004_disposition'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')
SHARED_KEYS = (
    'cache_format', 'provider', 'endpoint', 'model', 'prompt_version', 'sampling',
    'sample_index', 'served_model', 'extras',
)
BATCH = 2000
TABLES = ('response', 'llm_cache_entry')


def _hash(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(',', ':'), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def split_request(record: dict[str, Any]) -> tuple[Any, dict[str, Any] | None, dict[str, Any]]:
    """(messages or None, shared body or None, the request's own rest)."""
    rest = dict(record)
    messages = rest.get('messages')
    if isinstance(messages, list):
        del rest['messages']
    else:
        messages = None
    body = {key: rest.pop(key) for key in SHARED_KEYS if key in rest}
    sampling = body.get('sampling')
    if isinstance(sampling, dict) and 'seed' in sampling:
        body['sampling'] = {k: v for k, v in sampling.items() if k != 'seed'}
        rest['sampling'] = {'seed': sampling['seed']}
    return messages, (body or None), rest


def join_request(messages: Any, body: dict[str, Any] | None, rest: dict[str, Any]) -> dict[str, Any]:
    out = dict(body or {})
    if messages is not None:
        out['messages'] = messages
    for key, value in rest.items():
        if key == 'sampling' and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _rows_table(name: str, key: str) -> sa.TableClause:
    return sa.table(
        name,
        sa.column(key),
        sa.column('request', JSON_T),
        sa.column('prompt_id', sa.Integer),
        sa.column('params_id', sa.Integer),
    )


PROMPT = sa.table('prompt', sa.column('id', sa.Integer), sa.column('hash', sa.String),
                  sa.column('messages', JSON_T))
PARAMS = sa.table('request_params', sa.column('id', sa.Integer), sa.column('hash', sa.String),
                  sa.column('body', JSON_T))


def _insert(conn: sa.Connection) -> Any:
    return postgresql.insert if conn.dialect.name == 'postgresql' else sqlite.insert


def _intern(conn: sa.Connection, table: sa.TableClause, field: str,
            items: dict[str, Any], ids: dict[str, int]) -> None:
    missing = [h for h in items if h not in ids]
    for start in range(0, len(missing), 500):
        chunk = missing[start:start + 500]
        stmt = _insert(conn)(table).on_conflict_do_nothing(index_elements=['hash'])
        conn.execute(stmt, [{'hash': h, field: items[h]} for h in chunk])
        for row_id, row_hash in conn.execute(
            sa.select(table.c.id, table.c.hash).where(table.c.hash.in_(chunk))
        ):
            ids[row_hash] = int(row_id)


def convert(conn: sa.Connection) -> int:
    """Normalise every row not yet converted; returns how many rows changed."""
    changed = 0
    prompt_ids: dict[str, int] = {}
    params_ids: dict[str, int] = {}
    for name, key in (('response', 'id'), ('llm_cache_entry', 'key')):
        table = _rows_table(name, key)
        pk = table.c[key]
        last: Any = None
        while True:
            stmt = (
                sa.select(pk, table.c.request)
                .where(table.c.prompt_id.is_(None), table.c.params_id.is_(None))
                .order_by(pk)
                .limit(BATCH)
            )
            if last is not None:
                stmt = stmt.where(pk > last)
            rows = conn.execute(stmt).all()
            if not rows:
                break
            last = rows[-1][0]
            splits = []
            for row_key, request in rows:
                messages, body, rest = split_request(request or {})
                if messages is None and body is None:
                    continue  # nothing to share (an empty request): leave it as it is
                splits.append((row_key, messages, body, rest))
            prompts = {_hash(m): m for _, m, _, _ in splits if m is not None}
            bodies = {_hash(b): b for _, _, b, _ in splits if b is not None}
            _intern(conn, PROMPT, 'messages', prompts, prompt_ids)
            _intern(conn, PARAMS, 'body', bodies, params_ids)
            updates = [
                {
                    'k': row_key,
                    'p': prompt_ids[_hash(m)] if m is not None else None,
                    'b': params_ids[_hash(b)] if b is not None else None,
                    'r': rest,
                }
                for row_key, m, b, rest in splits
            ]
            if updates:
                conn.execute(
                    sa.update(table)
                    .where(pk == sa.bindparam('k'))
                    .values(prompt_id=sa.bindparam('p'), params_id=sa.bindparam('b'),
                            request=sa.bindparam('r', type_=JSON_T)),
                    updates,
                )
                changed += len(updates)
    return changed


def restore(conn: sa.Connection) -> None:
    """Put every normalised request back together (for the downgrade)."""
    prompts = {int(i): m for i, m in conn.execute(sa.select(PROMPT.c.id, PROMPT.c.messages))}
    bodies = {int(i): b for i, b in conn.execute(sa.select(PARAMS.c.id, PARAMS.c.body))}
    for name, key in (('response', 'id'), ('llm_cache_entry', 'key')):
        table = _rows_table(name, key)
        pk = table.c[key]
        last: Any = None
        while True:
            stmt = (
                sa.select(pk, table.c.request, table.c.prompt_id, table.c.params_id)
                .where(sa.or_(table.c.prompt_id.is_not(None), table.c.params_id.is_not(None)))
                .order_by(pk)
                .limit(BATCH)
            )
            if last is not None:
                stmt = stmt.where(pk > last)
            rows = conn.execute(stmt).all()
            if not rows:
                break
            last = rows[-1][0]
            conn.execute(
                sa.update(table)
                .where(pk == sa.bindparam('k'))
                .values(prompt_id=None, params_id=None, request=sa.bindparam('r', type_=JSON_T)),
                [
                    {
                        'k': k,
                        'r': join_request(
                            prompts.get(p) if p is not None else None,
                            bodies.get(b) if b is not None else None,
                            rest or {},
                        ),
                    }
                    for k, rest, p, b in rows
                ],
            )


def upgrade() -> None:
    op.create_table('prompt',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('hash', sa.String(), nullable=False),
    sa.Column('messages', JSON_T, nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_prompt')),
    sa.UniqueConstraint('hash', name=op.f('uq_prompt_hash'))
    )
    op.create_table('request_params',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('hash', sa.String(), nullable=False),
    sa.Column('body', JSON_T, nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_request_params')),
    sa.UniqueConstraint('hash', name=op.f('uq_request_params_hash'))
    )
    # Plain ADD COLUMN / DROP INDEX, never a table rebuild: on SQLite a rebuild drops the
    # old table, and with foreign keys on that deletes every step label (ON DELETE CASCADE).
    for name in TABLES:
        op.add_column(name, sa.Column('prompt_id', sa.Integer(), nullable=True))
        op.add_column(name, sa.Column('params_id', sa.Integer(), nullable=True))
    op.drop_index(op.f('ix_response_run_id'), table_name='response')
    op.drop_index(op.f('ix_response_cache_key'), table_name='response')
    op.drop_index(op.f('ix_step_label_response_id'), table_name='step_label')
    op.drop_index(op.f('ix_step_label_labeler_id'), table_name='step_label')
    op.drop_index(op.f('ix_step_label_ontology_version_id'), table_name='step_label')
    if context.is_offline_mode():
        # --sql output: no rows to read; a database upgraded from that script keeps its
        # requests whole, which storage.repo.requests reads as they are.
        return
    convert(op.get_bind())


def downgrade() -> None:
    if not context.is_offline_mode():
        restore(op.get_bind())
    op.create_index(op.f('ix_step_label_ontology_version_id'), 'step_label', ['ontology_version_id'], unique=False)
    op.create_index(op.f('ix_step_label_labeler_id'), 'step_label', ['labeler_id'], unique=False)
    op.create_index(op.f('ix_step_label_response_id'), 'step_label', ['response_id'], unique=False)
    op.create_index(op.f('ix_response_cache_key'), 'response', ['cache_key'], unique=False)
    op.create_index(op.f('ix_response_run_id'), 'response', ['run_id'], unique=False)
    for name in TABLES:
        # SQLite >= 3.35 drops a plain column in place (no rebuild, see upgrade()).
        op.drop_column(name, 'params_id')
        op.drop_column(name, 'prompt_id')
    op.drop_table('request_params')
    op.drop_table('prompt')
