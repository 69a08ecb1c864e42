"""Column types shared by the tables."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine


def utcnow() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(UTC)


def created_at_field() -> Any:
    """A ``created_at`` column: aware UTC, set on insert (one definition for every table)."""
    from sqlmodel import Field

    return Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


def updated_at_field() -> Any:
    """An ``updated_at`` column: aware UTC, set on insert and on every update."""
    from sqlmodel import Field

    return Field(
        default_factory=utcnow,
        sa_type=UTCDateTime,
        nullable=False,
        sa_column_kwargs={"onupdate": utcnow},
    )


class UTCDateTime(TypeDecorator[datetime]):
    """A ``DateTime(timezone=True)`` that always hands back aware UTC datetimes.

    SQLite stores no offset, so values are normalised to UTC on the way in and tagged as
    UTC on the way out; PostgreSQL (``timestamptz``) round-trips them natively. Naive
    datetimes given to us are taken to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC) if dialect.name != "sqlite" else value
        value = value.astimezone(UTC)
        # SQLite keeps text; store naive UTC so string comparison orders correctly.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def json_type(*, none_as_null: bool = False) -> TypeEngine[Any]:
    """JSON column type: ``JSON`` on SQLite, ``JSONB`` on PostgreSQL.

    JSONB has an equality operator (so ``DISTINCT``/``GROUP BY``/``UNION`` over rows work)
    and can be indexed; plain PostgreSQL ``json`` has neither.

    Args:
        none_as_null: store Python ``None`` as SQL ``NULL`` rather than JSON ``null`` (use it
            for nullable columns so ``IS NULL`` finds them).
    """
    return JSON(none_as_null=none_as_null).with_variant(
        JSONB(none_as_null=none_as_null), "postgresql"
    )


#: The JSON type of every non-nullable JSON column.
JSONType = json_type()
#: The JSON type of nullable JSON columns (``None`` stored as SQL ``NULL``).
NullableJSONType = json_type(none_as_null=True)
