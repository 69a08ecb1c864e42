"""The stall budget of a whole run: an endpoint that answers nothing for that long ends it.

:func:`llm.limits.stall_budget_s` says how long a batch may wait without any answer. A run
is often several batches (a disposition arm's re-ask rounds and its other arms, source
reliance's bare phase then its probes, a labeler's repair round): with a clock per batch a
stalled endpoint held such a run for one budget per batch (900 s and more with the
default limits). Inside :func:`run_stall_watch` (every ``driftlens`` command enters one,
so every job started from a page too) each endpoint has one :class:`StallClock` for the
whole run:

* it counts only the time spent waiting on that endpoint (local work between batches
  is not a stall) and restarts at each answer, whichever batch it belongs to;
* once it ran past the budget, the endpoint is *stalled* for the rest of the run: later
  batches to it fail at once with the stall's timeout result, sending nothing. The run
  then ends as a run with failed requests does (its rows say why, exit 3, one line) and
  a rerun asks exactly those requests again (answers are cached and stored as they come).

Outside a watch (library code calling :func:`llm.batch.run_chat_batch` directly) each
batch has a clock of its own, as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class StallClock:
    """The time a run has waited on one endpoint since its last answer.

    Args:
        now: The clock to read (``time.monotonic``; a test passes its own).
    """

    def __init__(self, *, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._idle_s = 0.0  # waited before the current wait began, since the last answer
        self._since: float | None = None  # when the current wait (or last answer) began
        self._waiting = 0  # batches in flight on this endpoint
        #: The budget the endpoint ran out of (``None``: it has not stalled).
        self.stalled: float | None = None

    def begin(self) -> None:
        """A batch starts sending to the endpoint."""
        with self._lock:
            if self._waiting == 0:
                self._since = self._now()
            self._waiting += 1

    def end(self) -> None:
        """A batch that :meth:`begin` started is over (answered, failed or cancelled)."""
        with self._lock:
            self._waiting = max(0, self._waiting - 1)
            if self._waiting == 0 and self._since is not None:
                self._idle_s += self._now() - self._since
                self._since = None

    def answered(self) -> None:
        """An answer came: the endpoint is alive, the clock starts again."""
        with self._lock:
            self._idle_s = 0.0
            if self._waiting:
                self._since = self._now()

    def waited(self) -> float:
        """Seconds spent waiting on the endpoint since its last answer."""
        with self._lock:
            running = self._now() - self._since if self._since is not None else 0.0
            return self._idle_s + running

    def stall(self, budget: float) -> None:
        """Mark the endpoint stalled for the rest of the run (it used up ``budget``)."""
        with self._lock:
            if self.stalled is None:
                self.stalled = budget


class RunStallWatch:
    """One :class:`StallClock` per endpoint for the run (see the module docstring)."""

    def __init__(self) -> None:
        self._clocks: dict[str, StallClock] = {}
        self._lock = threading.Lock()

    def clock(self, endpoint: str) -> StallClock:
        """The run's clock of ``endpoint`` (made on first use)."""
        with self._lock:
            return self._clocks.setdefault(endpoint, StallClock())


_WATCH: ContextVar[RunStallWatch | None] = ContextVar("driftlens_run_stall_watch", default=None)


@contextmanager
def run_stall_watch() -> Iterator[RunStallWatch]:
    """Give every batch inside the block one stall clock per endpoint (the run's).

    A block inside another keeps the outer run's clocks: the run is the outermost block.
    """
    outer = _WATCH.get()
    if outer is not None:
        yield outer
        return
    watch = RunStallWatch()
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)


def stall_clock(endpoint: str) -> StallClock:
    """The clock a batch to ``endpoint`` uses: the run's inside a watch, else its own."""
    watch = _WATCH.get()
    return watch.clock(endpoint) if watch is not None else StallClock()
