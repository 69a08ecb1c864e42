"""The constraint naming convention of every table, set on the shared SQLModel metadata.

Stable constraint names on every backend are needed by Alembic batch mode on SQLite and give
predictable names on PostgreSQL. Every table module imports this module before declaring a
table, so the convention is in place whichever table module is imported first.
"""

from sqlmodel import SQLModel

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
SQLModel.metadata.naming_convention = NAMING_CONVENTION
