"""SQLModel tables any instrument may store its runs in: runs and their keyed records.

An instrument from another package cannot add a revision to the workbench's schema, so
the workbench offers one generic store: :class:`InstrumentRun` (one named run of one
instrument, its model and settings) and :class:`InstrumentRecord` (one answered unit of
the run, keyed by ``(item, unit)``, with its text, its scored value and free JSON). The
key makes a resumed run duplicate-free, as ``response``'s key does for reasoning drift;
:mod:`storage.repo.instrument_runs` reads and writes them. The built-in instruments keep
their own tables.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# No `from __future__ import annotations`: SQLModel reads the annotations at class creation.
import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType
from storage.types import created_at_field as _created
from storage.types import updated_at_field as _updated

# Documented values of the enumerated string column ``InstrumentRun.status``.
INSTRUMENT_RUN_STATUS_VALUES = ("pending", "running", "done", "interrupted", "failed")


class InstrumentRun(SQLModel, table=True):
    """A named run of one instrument (the instrument's plugin name and the run's name)."""

    __tablename__ = "instrument_run"
    __table_args__ = (UniqueConstraint("instrument", "name", name="uq_instrument_run_key"),)

    id: int | None = Field(default=None, primary_key=True)
    instrument: str = Field(index=True)
    name: str
    model: str
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    simulated: bool = False
    status: str = "pending"
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class InstrumentRecord(SQLModel, table=True):
    """One answered unit of an instrument run: ``item`` (what is paired across runs) and
    ``unit`` (a sample, a probe) with the answer's text and its scored ``value``."""

    __tablename__ = "instrument_record"
    __table_args__ = (UniqueConstraint("run_id", "item", "unit", name="uq_instrument_record_key"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="instrument_run.id", ondelete="CASCADE")
    item: str
    unit: str
    text: str | None = Field(default=None, sa_type=Text)
    value: float | None = None
    data: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()
