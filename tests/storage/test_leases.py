"""Work leases: a live holder refuses others, a dead one (pid gone or stale) does not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from sqlmodel import Session, select

from storage.models import WorkLease
from storage.repo.leases import (
    LeaseHeldError,
    acquire_lease,
    pid_alive,
    release_lease,
    renew_lease,
)
from storage.types import utcnow


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_live_holder_on_this_host_refuses_a_dead_one_does_not(session: Session) -> None:
    host = socket.gethostname()
    mine = acquire_lease("k", session=session, what="Run 'r'")
    assert (mine.host, mine.pid) == (host, os.getpid())
    with pytest.raises(
        LeaseHeldError, match=rf"Run .r. is being generated .*\(pid {os.getpid()} on"
    ):
        acquire_lease("k", session=session, what="Run 'r'", pid=os.getpid() + 1)
    # The same process asking again gets it (e.g. a second run in one Streamlit process).
    again = acquire_lease("k", session=session, what="Run 'r'")
    dead = _dead_pid()
    assert not pid_alive(dead)
    row = session.get(WorkLease, "k")
    assert row is not None
    row.pid = dead
    session.add(row)
    session.commit()
    taken = acquire_lease("k", session=session, what="Run 'r'", pid=os.getpid())
    assert taken.token != again.token
    release_lease(again, session=session)  # an old token releases nothing
    assert session.get(WorkLease, "k") is not None
    release_lease(taken, session=session)
    assert session.exec(select(WorkLease)).all() == []


def test_holder_on_another_host_counts_while_its_heartbeat_is_fresh(session: Session) -> None:
    theirs = acquire_lease("k2", session=session, what="Run 'x'", host="elsewhere", pid=1)
    with pytest.raises(LeaseHeldError, match="pid 1 on elsewhere"):
        acquire_lease("k2", session=session, what="Run 'x'", stale_after_s=60)
    assert renew_lease(theirs, session=session)
    row = session.get(WorkLease, "k2")
    assert row is not None
    row.heartbeat_at = utcnow() - timedelta(seconds=120)
    session.add(row)
    session.commit()
    mine = acquire_lease("k2", session=session, what="Run 'x'", stale_after_s=60)
    assert mine.host == socket.gethostname()
    assert not renew_lease(theirs, session=session)  # taken over: the old holder knows
