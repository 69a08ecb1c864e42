"""step spans: a response's parsed steps stored as spans of its text

Revision ID: 0010_step_spans
Revises: 0009_source_claims
Create Date: 2026-12-01 17:00:00 UTC

Each parsed step of a response was stored as a string, a second copy of most of the
response text. A step that is an exact substring of the text (and at least
``MIN_SPAN_CHARS`` long) is now stored as ``[start, end]`` (``text[start:end]``, Python
string indices); any other step stays a string (see ``storage.step_spans``). No column
changes: only the values of ``response.steps``.

The conversion packs each row's unpacked steps and writes only rows whose stored value
changes, so running it again changes nothing. ``pack``/``unpack`` are frozen copies of
``storage.step_spans.pack_steps``/``unpack_steps`` (a revision must not import
application code that may change later); the migration test checks they agree.
Downgrade stores every step as a string again.
"""
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql

revision: str = '0010_step_spans'
down_revision: str | None = '0009_source_claims'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_T = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')
BATCH = 2000
MIN_SPAN_CHARS = 12

RESPONSE = sa.table('response', sa.column('id', sa.Integer), sa.column('text', sa.Text),
                    sa.column('steps', JSON_T))


def pack(text: str | None, steps: Sequence[str]) -> list[Any]:
    """Steps → stored form: see storage.step_spans.pack_steps."""
    if not text:
        return list(steps)
    out: list[Any] = []
    cursor = 0
    for step in steps:
        start = -1
        if len(step) >= MIN_SPAN_CHARS:
            start = text.find(step, cursor)
            if start < 0:
                start = text.find(step)
        if start < 0:
            out.append(step)
            continue
        end = start + len(step)
        out.append([start, end])
        cursor = end
    return out


def unpack(text: str | None, stored: Sequence[Any] | None) -> list[str]:
    """Stored form → steps: see storage.step_spans.unpack_steps."""
    out: list[str] = []
    for item in stored or ():
        if isinstance(item, str):
            out.append(item)
            continue
        start, end = item
        if text is None or not 0 <= start <= end <= len(text):
            raise ValueError(f'step span [{start}, {end}] does not fit its response text')
        out.append(text[start:end])
    return out


def _rewrite(conn: sa.Connection, new_value: Any) -> int:
    """Rewrite ``steps`` of every row where ``new_value(text, steps)`` differs; rows changed."""
    changed = 0
    last = 0
    while True:
        rows = conn.execute(
            sa.select(RESPONSE.c.id, RESPONSE.c.text, RESPONSE.c.steps)
            .where(RESPONSE.c.id > last)
            .order_by(RESPONSE.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return changed
        last = rows[-1][0]
        updates = []
        for row_id, text, steps in rows:
            stored = steps if isinstance(steps, list) else []
            value = new_value(text, stored)
            if value != stored:
                updates.append({'k': row_id, 's': value})
        if updates:
            conn.execute(
                sa.update(RESPONSE)
                .where(RESPONSE.c.id == sa.bindparam('k'))
                .values(steps=sa.bindparam('s', type_=JSON_T)),
                updates,
            )
            changed += len(updates)


def convert(conn: sa.Connection) -> int:
    """Store every row's steps as spans where they can be; rows changed (0 when run again)."""
    return _rewrite(conn, lambda text, stored: pack(text, unpack(text, stored)))


def restore(conn: sa.Connection) -> int:
    """Store every step as a string again (for the downgrade); rows changed."""
    return _rewrite(conn, unpack)


def upgrade() -> None:
    if context.is_offline_mode():
        return  # --sql output: rows stay as they are, which the readers accept
    convert(op.get_bind())


def downgrade() -> None:
    if not context.is_offline_mode():
        restore(op.get_bind())
