"""Alembic environment, driven from :mod:`storage.migrate` (no alembic.ini needed).

:func:`storage.migrate.upgrade` passes an open connection in ``config.attributes``;
otherwise the URL comes from the ``sqlalchemy.url`` option (offline ``--sql`` mode) or is
resolved like the application does (``DRIFTLENS_DB_URL`` / workspace default).
"""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

import storage.models  # noqa: F401  (registers every table on SQLModel.metadata)
from storage.migrate import migration_options
from storage.types import UTCDateTime

config = context.config
target_metadata = SQLModel.metadata


def _render_item(type_: str, obj: Any, autogen_context: Any) -> str | Literal[False]:
    # Revisions must not import application code: render our column types as plain SA types.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    if type_ == "type" and type(obj).__name__ == "AutoString":
        return "sa.String()"
    return False


def _configure(connection: Connection | None = None, url: str | None = None) -> None:
    dialect = connection.dialect.name if connection is not None else (url or "").split(":")[0]
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        render_item=_render_item,
        literal_binds=connection is None,
        **migration_options(dialect),
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout (``alembic upgrade head --sql``)."""
    _configure(url=config.get_main_option("sqlalchemy.url"))
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run against the connection handed over by :func:`storage.migrate.upgrade`."""
    connection = config.attributes.get("connection")
    if connection is None:
        from storage.engine import make_engine
        from storage.settings import resolve_settings

        url = config.get_main_option("sqlalchemy.url") or resolve_settings().db_url
        with make_engine(url).connect() as conn:
            _configure(conn)
            with context.begin_transaction():
                context.run_migrations()
            conn.commit()
        return
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
