"""The typed view of a ``job`` row that pages and the CLI read (rate and ETA included)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storage.job_models import Job
from storage.types import utcnow


@dataclass(frozen=True)
class JobRecord:
    """One job as stored, with what a page derives from it.

    Attributes:
        id: The row id.
        kind: The command path, e.g. ``generate``, ``analyze``, ``ontology round``.
        title: What a person reads, e.g. ``Generate and label 'demo'``.
        argv: The command line after ``driftlens --workspace … --db …``.
        scope: What the job is about (``{"run": "demo"}``), for a page to find its jobs.
        origin: ``page`` (a detached process) or ``shell`` (a command typed in a shell).
        state: ``running``, ``done``, ``failed``, ``cancelled`` or ``interrupted``.
        stage: What the command does now (the progress bar's label).
        done: Units done in this stage.
        total: Units of this stage (0 while unknown).
        unit: What a unit is (``responses``, ``pairs``), may be empty.
        host: The host the process runs on.
        pid: Its process id (0 until the process started).
        error: The one-line reason a job failed.
        log_path: The log file (workspace-relative when under the workspace).
        result: What the command produced, e.g. ``{"analysis": 4}``.
        resumed_by: The job that resumed this one.
        started_at: When the job was submitted.
        updated_at: The last report of the process (progress or heartbeat).
        stage_started_at: When the current stage began.
        finished_at: When it ended (``None`` while running).
    """

    id: int
    kind: str
    title: str
    argv: tuple[str, ...]
    scope: Mapping[str, Any]
    origin: str
    state: str
    stage: str
    done: int
    total: int
    unit: str
    host: str
    pid: int
    error: str | None
    log_path: str | None
    result: Mapping[str, Any] | None
    resumed_by: int | None
    started_at: datetime
    updated_at: datetime
    stage_started_at: datetime
    finished_at: datetime | None

    @classmethod
    def from_row(cls, row: Job) -> JobRecord:
        """The record of a stored row."""
        assert row.id is not None
        return cls(
            id=row.id,
            kind=row.kind,
            title=row.title,
            argv=tuple(row.argv or ()),
            scope=dict(row.scope or {}),
            origin=row.origin,
            state=row.state,
            stage=row.stage,
            done=row.done,
            total=row.total,
            unit=row.unit,
            host=row.host,
            pid=row.pid,
            error=row.error,
            log_path=row.log_path,
            result=dict(row.result) if row.result is not None else None,
            resumed_by=row.resumed_by,
            started_at=row.started_at,
            updated_at=row.updated_at,
            stage_started_at=row.stage_started_at,
            finished_at=row.finished_at,
        )

    @property
    def running(self) -> bool:
        """Whether the job is still working."""
        return self.state == "running"

    @property
    def resumable(self) -> bool:
        """Whether *Resume* applies: it stopped before the end and was not resumed yet."""
        return self.state in ("interrupted", "failed", "cancelled") and self.resumed_by is None

    def elapsed_s(self, now: datetime | None = None) -> float:
        """Seconds from submission to the end (or to ``now`` while running)."""
        end = self.finished_at or now or utcnow()
        return max(0.0, (end - self.started_at).total_seconds())

    @property
    def rate(self) -> float | None:
        """Units per second in the current stage, from the process's last report."""
        seconds = (self.updated_at - self.stage_started_at).total_seconds()
        if self.done <= 0 or seconds <= 0:
            return None
        return self.done / seconds

    @property
    def eta_s(self) -> float | None:
        """Seconds left in this stage at the current rate (``None`` while unknown)."""
        rate = self.rate
        if rate is None or self.total <= 0:
            return None
        return max(0.0, (self.total - self.done) / rate)

    def progress_line(self) -> str:
        """``stage — done/total unit · rate/s · ETA m:ss`` in plain text."""
        parts = [self.stage or "starting"]
        if self.total:
            unit = f" {self.unit}" if self.unit else ""
            parts.append(f"{self.done:,}/{self.total:,}{unit}")
        rate = self.rate
        if rate is not None:
            parts.append(f"{rate:,.1f}/s")
        eta = self.eta_s
        if eta is not None and self.running:
            parts.append(f"ETA {_clock(eta)}")
        return " — ".join(parts[:2]) + "".join(f" · {p}" for p in parts[2:])


def _clock(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
