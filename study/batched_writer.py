"""Rows upserted as they arrive, committed in batches: the runs' shared writer.

Large transactions are what makes a run fast: each commit rewrites the touched index pages
into the WAL, so committing every 8 rows wrote ~7x the database's size. Committing every
``every`` rows or ``interval_s`` seconds, whichever comes first, keeps what a crash can
lose to one batch or a couple of seconds. Each commit also renews the run's lease (at most
every ``HEARTBEAT_S``), so a process on another host sees this one alive.

Generation (``study/reasoning/generation.py``), memory conflicts and source reliance subclass it and
say only how their pending rows are written (:meth:`BatchedWriter.write`).
"""

from __future__ import annotations

import time
from typing import Any, Generic, TypeVar

from sqlmodel import Session

from storage.repo.leases import renew_lease

T = TypeVar("T")


class BatchedWriter(Generic[T]):
    """Holds rows and writes them in one transaction per batch (see the module docstring)."""

    HEARTBEAT_S = 30.0

    def __init__(
        self, session: Session, *, every: int, interval_s: float, lease: Any = None
    ) -> None:
        self.session = session
        self.every = every
        self.interval_s = interval_s
        self.lease = lease
        self.pending: list[T] = []
        self.last = self.last_heartbeat = time.monotonic()

    def write(self, pending: list[T]) -> None:
        """Upsert ``pending`` in the open transaction (the subclass's part)."""
        raise NotImplementedError

    def add(self, row: T) -> None:
        self.pending.append(row)
        if len(self.pending) >= self.every or time.monotonic() - self.last >= self.interval_s:
            self.flush()

    def flush_if_due(self) -> None:
        """Commit what is held once the interval has passed (called on the batch's tick)."""
        if self.pending and time.monotonic() - self.last >= self.interval_s:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.write(self.pending)
            self.pending = []
        self.session.commit()
        self.last = time.monotonic()
        if self.lease is not None and self.last - self.last_heartbeat >= self.HEARTBEAT_S:
            renew_lease(self.lease, session=self.session)
            self.last_heartbeat = self.last
