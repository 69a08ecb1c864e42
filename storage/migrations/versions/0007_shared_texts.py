"""shared texts: the instruction stored once, the cache without copies of answer texts

Revision ID: 0007_shared_texts
Revises: 0006_ontology_loop
Create Date: 2026-12-01 13:40:00 UTC

After revision 0005 a workspace still held two kinds of repeated text:

* every ``prompt`` row repeated the instruction (the leading system message, ~470 bytes,
  the same in every prompt of a study). ``prompt.prefix_id`` now points at a prompt row
  holding the leading system messages once, and ``messages`` keeps only the rest. The
  row's ``hash`` stays the hash of the whole list, so lookups do not change.
* every request-cache entry written by generation held its own copy of the answer text
  the response row already holds. Such an entry's stored result now has
  ``"text_in": "response"`` instead of ``"text"``, and the text is read from the response
  row with the same ``cache_key`` (indexed again, as ``ix_response_cache_key``). Only
  entries whose text is exactly a response row's text are converted.

Converted rows are skipped, so running the conversion again changes nothing. The prefix
split is a frozen copy of ``storage.repo.requests.split_prefix`` (a revision must not
import application code that may change later); the migration test checks both agree.
Downgrade puts every text back.
"""
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql, sqlite

revision: str = '0007_shared_texts'
down_revision: str | None = '0006_ontology_loop'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')
BATCH = 2000
TEXT_IN = ('text_in', 'response')

PROMPT = sa.table('prompt', sa.column('id', sa.Integer), sa.column('hash', sa.String),
                  sa.column('prefix_id', sa.Integer), sa.column('messages', JSON_T))
CACHE = sa.table('llm_cache_entry', sa.column('key', sa.String), sa.column('response', JSON_T))
RESPONSE = sa.table('response', sa.column('cache_key', sa.String), sa.column('text', sa.Text))


def _hash(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(',', ':'), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def split_prefix(messages: Any) -> tuple[list[Any] | None, list[Any]]:
    """(leading system messages or None, the rest): see storage.repo.requests."""
    n = 0
    while n < len(messages) and isinstance(messages[n], dict) and messages[n].get('role') == 'system':
        n += 1
    if n == 0 or n == len(messages):
        return None, list(messages)
    return list(messages[:n]), list(messages[n:])


def _insert(conn: sa.Connection) -> Any:
    return postgresql.insert if conn.dialect.name == 'postgresql' else sqlite.insert


def _prefix_ids(conn: sa.Connection, prefixes: dict[str, list[Any]], ids: dict[str, int]) -> None:
    missing = [h for h in prefixes if h not in ids]
    for start in range(0, len(missing), 500):
        chunk = missing[start:start + 500]
        stmt = _insert(conn)(PROMPT).on_conflict_do_nothing(index_elements=['hash'])
        conn.execute(stmt, [{'hash': h, 'prefix_id': None, 'messages': prefixes[h]} for h in chunk])
        for row_id, row_hash in conn.execute(
            sa.select(PROMPT.c.id, PROMPT.c.hash).where(PROMPT.c.hash.in_(chunk))
        ):
            ids[row_hash] = int(row_id)


def convert_prompts(conn: sa.Connection) -> int:
    """Move the leading system messages of every prompt to a shared row; rows changed."""
    changed = 0
    ids: dict[str, int] = {}
    last = 0
    while True:
        rows = conn.execute(
            sa.select(PROMPT.c.id, PROMPT.c.messages)
            .where(PROMPT.c.prefix_id.is_(None), PROMPT.c.id > last)
            .order_by(PROMPT.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return changed
        last = rows[-1][0]
        todo = []
        for row_id, messages in rows:
            prefix, rest = split_prefix(messages if isinstance(messages, list) else [])
            if prefix is not None:
                todo.append((row_id, _hash(prefix), prefix, rest))
        _prefix_ids(conn, {h: p for _, h, p, _ in todo}, ids)
        if todo:
            conn.execute(
                sa.update(PROMPT)
                .where(PROMPT.c.id == sa.bindparam('k'))
                .values(prefix_id=sa.bindparam('p'), messages=sa.bindparam('m', type_=JSON_T)),
                [{'k': k, 'p': ids[h], 'm': rest} for k, h, _, rest in todo],
            )
            changed += len(todo)


def _texts(conn: sa.Connection, keys: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for start in range(0, len(keys), 500):
        for key, text in conn.execute(
            sa.select(RESPONSE.c.cache_key, RESPONSE.c.text).where(
                RESPONSE.c.cache_key.in_(keys[start:start + 500]), RESPONSE.c.text.is_not(None)
            )
        ):
            out.setdefault(key, text)
    return out


def _update_cache(conn: sa.Connection, updates: list[dict[str, Any]]) -> None:
    if updates:
        conn.execute(
            sa.update(CACHE)
            .where(CACHE.c.key == sa.bindparam('k'))
            .values(response=sa.bindparam('r', type_=JSON_T)),
            updates,
        )


def convert_cache(conn: sa.Connection) -> int:
    """Drop the answer text of every cache entry a response row holds it for; rows changed."""
    changed = 0
    last = ''
    while True:
        rows = conn.execute(
            sa.select(CACHE.c.key, CACHE.c.response)
            .where(CACHE.c.key > last)
            .order_by(CACHE.c.key)
            .limit(BATCH)
        ).all()
        if not rows:
            return changed
        last = rows[-1][0]
        candidates = {
            k: r for k, r in rows
            if isinstance(r, dict) and isinstance(r.get('text'), str) and TEXT_IN[0] not in r
        }
        texts = _texts(conn, list(candidates))
        updates = []
        for key, data in candidates.items():
            if texts.get(key) == data['text']:
                slim = {k: v for k, v in data.items() if k != 'text'}
                slim[TEXT_IN[0]] = TEXT_IN[1]
                updates.append({'k': key, 'r': slim})
        _update_cache(conn, updates)
        changed += len(updates)


def convert(conn: sa.Connection) -> int:
    """Both conversions; returns how many rows changed (0 when run again)."""
    return convert_prompts(conn) + convert_cache(conn)


def restore(conn: sa.Connection) -> None:
    """Put every text back where it was before this revision (for the downgrade)."""
    last = ''
    while True:
        rows = conn.execute(
            sa.select(CACHE.c.key, CACHE.c.response)
            .where(CACHE.c.key > last)
            .order_by(CACHE.c.key)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        last = rows[-1][0]
        slim = {k: r for k, r in rows if isinstance(r, dict) and r.get(TEXT_IN[0]) == TEXT_IN[1]}
        texts = _texts(conn, list(slim))
        updates = []
        for key, data in slim.items():
            whole = {k: v for k, v in data.items() if k != TEXT_IN[0]}
            whole['text'] = texts.get(key)
            updates.append({'k': key, 'r': whole})
        _update_cache(conn, updates)
    prefixes = {
        int(i): m for i, m in conn.execute(
            sa.select(PROMPT.c.id, PROMPT.c.messages).where(
                PROMPT.c.id.in_(sa.select(PROMPT.c.prefix_id).where(PROMPT.c.prefix_id.is_not(None)))
            )
        )
    }
    last_id = 0
    while True:
        rows = conn.execute(
            sa.select(PROMPT.c.id, PROMPT.c.prefix_id, PROMPT.c.messages)
            .where(PROMPT.c.prefix_id.is_not(None), PROMPT.c.id > last_id)
            .order_by(PROMPT.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        last_id = rows[-1][0]
        conn.execute(
            sa.update(PROMPT)
            .where(PROMPT.c.id == sa.bindparam('k'))
            .values(prefix_id=None, messages=sa.bindparam('m', type_=JSON_T)),
            [{'k': k, 'm': list(prefixes[p]) + list(m)} for k, p, m in rows],
        )


def upgrade() -> None:
    # Plain ADD COLUMN, never a table rebuild (see 0005: a rebuild cascades deletions).
    op.add_column('prompt', sa.Column('prefix_id', sa.Integer(), nullable=True))
    op.create_index(op.f('ix_response_cache_key'), 'response', ['cache_key'], unique=False)
    if context.is_offline_mode():
        return  # --sql output: rows stay as they are, which the readers accept
    convert(op.get_bind())


def downgrade() -> None:
    if not context.is_offline_mode():
        restore(op.get_bind())
    op.drop_index(op.f('ix_response_cache_key'), table_name='response')
    op.drop_column('prompt', 'prefix_id')
