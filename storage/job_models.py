"""The ``job`` table: one row per long action (a ``driftlens …`` command) of a workspace.

A job is a CLI command run in its own process: started from a page
(:func:`study.jobs.submit_job`, a detached process that outlives the app server) or from a
shell (the command records its own row when it first reports progress). The process writes
its stage and ``(done, total)`` into the row; pages and the *Jobs* page read it back.
Imported by :mod:`storage.models`, so the metadata Alembic compares holds it.

``argv`` is the command line after ``driftlens --workspace … --db …``; keys never go in it
(providers read them from the environment). ``scope`` names what the job is about (e.g.
``{"run": "demo"}``) so a page shows only its own jobs.

No ``from __future__ import annotations`` here: SQLModel reads the annotations at class
creation time.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import Text
from sqlmodel import Field, SQLModel

import storage.metadata  # noqa: F401  (constraint names are set before any table is declared)
from storage.types import JSONType, NullableJSONType, UTCDateTime, created_at_field, utcnow

#: ``running``: the process works (or died: seen as ``interrupted`` once its pid is gone);
#: ``done`` / ``failed``: the command ended (``error`` holds the failure's one line);
#: ``cancelled``: stopped from a page; ``interrupted``: the process died without ending.
JOB_STATE_VALUES = ("running", "done", "failed", "cancelled", "interrupted")
#: Where a job came from: a page (a detached process) or a shell (the command itself).
JOB_ORIGIN_VALUES = ("page", "shell")


class Job(SQLModel, table=True):
    """One long action: what it runs, where it is, how it ended."""

    __tablename__ = "job"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(index=True)
    title: str
    argv: list[str] = Field(default_factory=list, sa_type=JSONType)
    scope: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    origin: str = "page"
    state: str = Field(default="running", index=True)
    stage: str = ""
    done: int = 0
    total: int = 0
    unit: str = ""
    host: str = ""
    pid: int = 0
    error: str | None = Field(default=None, sa_type=Text)
    log_path: str | None = None
    result: dict[str, Any] | None = Field(default=None, sa_type=NullableJSONType)
    #: The job that resumed this one (an interrupted or failed job re-submitted).
    resumed_by: int | None = None
    started_at: datetime = created_at_field()
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    #: When the stage last changed (the rate and ETA count units from here).
    stage_started_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
