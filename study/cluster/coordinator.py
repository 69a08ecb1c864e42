"""What every sharded pass does around its shards: the worker's shard lease, the
coordinator's heartbeat and progress poll, and (for the instruments' commands) the
coordinator's whole part: its lease, the run row before and its status after."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from sqlmodel import Session

from storage.repo.leases import Lease, acquire_lease, release_lease, renew_lease
from storage.settings import Settings
from storage.workspace import open_workspace_session

if TYPE_CHECKING:
    from study.cluster.executors import Executor

T = TypeVar("T")
P = TypeVar("P")
R = TypeVar("R")

#: How often the coordinator renews its lease while the shards run.
HEARTBEAT_S = 30.0


def under_shard_lease(
    settings: Settings, lease_key: str, what: str, work: Callable[[Session], T]
) -> T:
    """Run ``work(session)`` in a worker under the shard's lease, released however it ends."""
    with open_workspace_session(settings, migrate=False) as session:
        lease = acquire_lease(lease_key, session=session, what=what)
        try:
            return work(session)
        finally:
            session.rollback()
            release_lease(lease, session=session)


def heartbeat_poll(
    lease: Lease, *, session: Session, report: Callable[[], None] | None = None
) -> Callable[[], None]:
    """The executor's ``poll``: renew ``lease`` every :data:`HEARTBEAT_S`, then ``report()``."""
    beat = [time.monotonic()]

    def poll() -> None:
        if time.monotonic() - beat[0] >= HEARTBEAT_S:
            renew_lease(lease, session=session)
            beat[0] = time.monotonic()
        if report is not None:
            report()

    return poll


def run_coordinated(
    parent: str,
    what: str,
    *,
    session: Session,
    executor: Executor,
    fn: Callable[[P], R],
    tasks: Callable[[], Sequence[P]],
    report: Callable[[], None] | None = None,
    before: Callable[[], None] | None = None,
    after: Callable[[list[R] | None], None] | None = None,
) -> list[R]:
    """The coordinator's part of a sharded pass, under its lease ``parent``.

    Takes the run-level lease (the one the single-process command takes, so the two
    exclude each other), runs ``before()`` (create the run row, mark it running), builds
    the shard payloads, maps ``fn`` over them on ``executor`` with the heartbeat poll, and
    runs ``after(parts)`` (``None`` when the shards failed) before releasing the lease.
    """
    lease = acquire_lease(parent, session=session, what=what)
    parts: list[R] | None = None
    try:
        if before is not None:
            before()
        payloads = tasks()
        poll = heartbeat_poll(lease, session=session, report=report)
        poll()
        parts = executor.map(fn, payloads, poll=poll)
        return parts
    finally:
        session.rollback()
        try:
            if after is not None:
                after(parts)
        finally:
            session.rollback()
            release_lease(lease, session=session)
