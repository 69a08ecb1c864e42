"""What every sharded pass does around its shards: the worker's shard lease, the
coordinator's heartbeat and progress poll (generation, labeling and judging share them)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from sqlmodel import Session

from storage.repo.leases import Lease, acquire_lease, release_lease, renew_lease
from storage.settings import Settings
from storage.workspace import open_workspace_session

T = TypeVar("T")

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
