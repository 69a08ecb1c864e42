"""Model roles stored with a run: which model judged, labeled or classified it.

One row per (scope, run, role, model): the model that played the role, the model under
test of that run, and whether the two are the same (allowed only by
``--allow-self-judging``). Reports print these rows; the check itself is
:mod:`llm.roles`. Imported by :mod:`storage.models`.

No ``from __future__ import annotations`` here: SQLModel reads the annotations at class
creation time.
"""

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import created_at_field


class ModelRole(SQLModel, table=True):
    """One role assignment of one run (kept as first recorded; self-judging updated)."""

    __tablename__ = "model_role"
    __table_args__ = (UniqueConstraint("scope", "run", "role", "model", name="uq_model_role_key"),)

    id: int | None = Field(default=None, primary_key=True)
    #: what ``run`` names: ``generation`` (a generation run, shared by the instruments whose
    #: runs are generation runs) or an instrument's plugin name (its own runs or studies)
    scope: str = Field(index=True)
    run: str = Field(index=True)
    #: ``judge``, ``labeler``, ``classifier``, ``awareness judge``, ``claim writer``
    role: str
    model: str
    #: the model whose answers the role grades (``None``: not known)
    model_under_test: str | None = None
    self_judging: bool = False
    created_at: datetime = created_at_field()
