"""Ids in chunks small enough for one ``IN (...)`` list (SQLite's bound-parameter limit)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

#: Ids per ``IN (...)`` list: well under SQLite's limit of bound parameters per statement.
ID_CHUNK = 500


def id_chunks(ids: Iterable[T], size: int = ID_CHUNK) -> Iterator[list[T]]:
    """``ids`` in their order, in lists of at most ``size``."""
    items = list(ids)
    for start in range(0, len(items), size):
        yield items[start : start + size]
