"""Rows by primary key, for the writes that update a row the caller names by id."""

from __future__ import annotations

from typing import TypeVar

from sqlmodel import Session, SQLModel

from storage.errors import NotFoundError

M = TypeVar("M", bound=SQLModel)


def require_row(session: Session, model: type[M], row_id: int, *, what: str) -> M:
    """The ``model`` row with this id.

    Args:
        session: the caller's session.
        model: the table's model.
        row_id: the primary key.
        what: the row's kind as the message names it (``"Generation run"``).

    Raises:
        NotFoundError: ``WHAT ROW_ID does not exist.``
    """
    row = session.get(model, row_id)
    if row is None:
        raise NotFoundError(f"{what} {row_id} does not exist.")
    return row
