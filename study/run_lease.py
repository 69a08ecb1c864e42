"""One lease per run for every instrument's run and judge commands.

Two processes on the same run would each ask the whole plan (a 42-request disposition
plan cost 78 and 84 requests when run twice at once). ``generate`` and ``sources run``
took a lease of their own; every other run and judge command takes the same one through
:func:`run_lease`, so a second process is refused in one sentence naming the holder.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlmodel import Session

from storage.repo.leases import Lease, acquire_lease, release_lease


@contextmanager
def run_lease(key: str, *, session: Session, what: str) -> Iterator[Lease]:
    """Hold the lease ``key`` for the block (released whatever happens).

    Args:
        key: what the lease is for, ``<instrument>_<stage>:<run name>``.
        session: the caller's session (the lease commits at once).
        what: how the refusal names the work, e.g. ``Conflicts run 'demo'``.

    Raises:
        storage.repo.leases.LeaseHeldError: another live process holds it.
    """
    lease = acquire_lease(key, session=session, what=what)
    try:
        yield lease
    finally:
        session.rollback()  # whatever failed mid-write must not block the release
        release_lease(lease, session=session)
