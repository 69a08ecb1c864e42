"""What the revision tests share: a revision's module, the base rows of a populated database.

Each test of one Alembic revision takes a database back before the revision, writes rows
in the old layout and upgrades again; the rows every such test starts from (a question, a
model, a run, one response) and the way a revision file is loaded live here once.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from types import ModuleType

from sqlalchemy import text
from sqlalchemy.engine import Engine

from storage import migrate

_T = "'2026-01-01'"

# One question, one model, one run and one parsed response: the smallest populated
# database a revision has to carry over (raw SQL: the models are today's, not the old layout).
BASE_ROWS: tuple[str, ...] = (
    "INSERT INTO question (id, external_id, text, domains, created_at, updated_at) "
    f"VALUES (1, 'q-1', 'Rent or buy?', '[]', {_T}, {_T})",
    "INSERT INTO model_spec (id, spec, provider, model, simulated, params, created_at) "
    f"VALUES (1, 'sim/default', 'sim', 'default', false, '{{}}', {_T})",
    "INSERT INTO generation_run (id, name, model_spec_id, prompt_version, sampling, config, "
    f"simulated, status, created_at, updated_at) VALUES (1, 'r', 1, 'v1', '{{}}', '{{}}', "
    f"false, 'done', {_T}, {_T})",
    "INSERT INTO response (id, run_id, question_id, condition, condition_class, sample, "
    "request, steps, parse_status, attempts, text, created_at, updated_at) VALUES (1, 1, 1, "
    f"'baseline', 'none', 0, '{{}}', '[\"a\"]', 'ok', 1, 'kept', {_T}, {_T})",
)


def revision_module(revision: str) -> ModuleType:
    """Load one revision file as a module (its frozen helpers are called directly).

    Args:
        revision: The revision's file name without ``.py``, e.g. ``0005_normalised_requests``.

    Returns:
        The executed module.
    """
    path = migrate.MIGRATIONS_DIR / "versions" / f"{revision}.py"
    spec = importlib.util.spec_from_file_location(f"rev_{revision[:4]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def insert_at(engine: Engine, revision: str, rows: Sequence[str]) -> None:
    """Upgrade to ``revision`` and write ``rows`` (raw SQL) in that revision's layout.

    Args:
        engine: The database, empty or below ``revision``.
        revision: Where the rows are written.
        rows: ``INSERT`` statements, run in one transaction.
    """
    assert migrate.upgrade(engine, revision) == revision
    with engine.begin() as conn:
        for sql in rows:
            conn.execute(text(sql))
