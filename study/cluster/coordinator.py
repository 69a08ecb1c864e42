"""What every sharded pass does around its shards: what it runs on (:class:`ShardedPass`),
the worker's shard lease, the coordinator's heartbeat and progress poll, and (for the
instruments' commands) the coordinator's whole part: its lease, the run row before and its
status after."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.models import GenerationRun, Response
from storage.repo.leases import Lease, acquire_lease, release_lease, renew_lease
from storage.settings import Settings
from storage.workspace import open_workspace_session
from study.cluster.shards import DEFAULT_SHARD_QUESTIONS, shard_by_question

if TYPE_CHECKING:
    from study.cluster.executors import Executor

T = TypeVar("T")
P = TypeVar("P")
R = TypeVar("R")
A = TypeVar("A")

#: How often the coordinator renews its lease while the shards run.
HEARTBEAT_S = 30.0


class _Shard(Protocol):
    """A shard's summary: how many of its units failed."""

    @property
    def failed(self) -> int:
        """Units that failed."""
        ...


@dataclass(frozen=True)
class ShardedPass:
    """What every sharded entry point (``study.cluster.*``) runs on and whom it tells.

    The command's own arguments (its run, options, judge...) stay its own; these are the
    ones every sharded pass takes alike.

    Attributes:
        session: The coordinator's session: its lease, the run row, the progress reads.
        settings: The workspace settings every shard task opens its own session with.
        executor: Who runs the shards.
        per_shard: Units a shard (questions, banks, items or stems, as the pass cuts them).
        progress: ``progress(done, total)``: the pass's finished units, read from the
            database (so every worker's), over its plan; what a unit is, each entry point
            says.
        on_plan: Called with the plan's size as one line before the plan is built (or the
            run row made), for the passes that announce a plan.
    """

    session: Session
    settings: Settings
    executor: Executor
    per_shard: int = DEFAULT_SHARD_QUESTIONS
    progress: Callable[[int, int], None] | None = None
    on_plan: Callable[[str], None] | None = None


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
    sharding: ShardedPass,
    parent: str,
    what: str,
    *,
    fn: Callable[[P], R],
    tasks: Callable[[], Sequence[P]],
    total: int,
    done: Callable[[], Any],
    before: Callable[[], None] | None = None,
    after: Callable[[list[R] | None], None] | None = None,
) -> list[R]:
    """The coordinator's part of a sharded pass, under its lease ``parent``.

    Takes the run-level lease (the one the single-process command takes, so the two
    exclude each other), runs ``before()`` (create the run row, mark it running), builds
    the shard payloads, maps ``fn`` over them on the pass's executor with the heartbeat
    poll, which tells ``sharding.progress`` ``done()`` over ``total``, and runs
    ``after(parts)`` (``None`` when the shards failed) before releasing the lease.
    """
    session = sharding.session
    lease = acquire_lease(parent, session=session, what=what)
    parts: list[R] | None = None
    try:
        if before is not None:
            before()
        payloads = tasks()
        report = progress_report(sharding.progress, total, done, session=session)
        poll = heartbeat_poll(lease, session=session, report=report)
        poll()
        parts = sharding.executor.map(fn, payloads, poll=poll)
        return parts
    finally:
        session.rollback()
        try:
            if after is not None:
                after(parts)
        finally:
            session.rollback()
            release_lease(lease, session=session)


@dataclass
class RunStatus:
    """The run row a coordinator made (in ``before``) and the status it leaves (``after``).

    ``write(run_id, status, session=...)`` stores a status without committing. The status
    left is what a single process would leave: ``done`` when no shard failed a unit,
    ``incomplete`` when one did, ``interrupted`` when the shards themselves failed.
    """

    session: Session
    write: Callable[..., object]
    run_id: int = 0
    status: str = "interrupted"

    def running(self, run_id: int) -> None:
        """Remember the run row and mark it running (committed)."""
        self.run_id = run_id
        self.write(run_id, "running", session=self.session)
        self.session.commit()

    def stored_responses(self) -> int:
        """The responses stored under the run row (0 before it is made).

        The progress of a pass whose run row owns ``response`` rows (generation, conflicts).
        """
        return response_count(self.run_id, session=self.session)

    def after(self, parts: Sequence[_Shard] | None) -> None:
        """The coordinator's ``after``: store the final status (``parts`` None: interrupted)."""
        if parts is not None:
            self.status = "done" if all(p.failed == 0 for p in parts) else "incomplete"
        if self.run_id:
            self.write(self.run_id, self.status, session=self.session)
            self.session.commit()


def progress_report(
    progress: Callable[[int, int], None] | None,
    total: int,
    count: Callable[[], Any],
    *,
    session: Session,
) -> Callable[[], None] | None:
    """The coordinator's ``report``: ``progress(count(), total)`` in a fresh snapshot.

    ``count()`` reads the database, so it sees every worker's committed rows; ``None``
    when there is no ``progress`` to call.
    """
    if progress is None:
        return None

    def report() -> None:
        session.commit()  # a fresh snapshot: every worker's committed rows
        progress(int(count()), total)

    return report


@dataclass(frozen=True)
class QuestionShard(Generic[A]):
    """One shard of a pass over a stored run's responses (label, judge), as a worker gets it.

    Attributes:
        settings: The workspace settings the worker opens its own session with.
        run: The run's name.
        what: The pass as its leases name it (``"Judging of 'r1'"``).
        question_ids: The shard's questions.
        lease_key: The shard's lease.
        ask: What the pass asks of every shard (its judge, its labeler...); picklable.
    """

    settings: Settings
    run: str
    what: str
    question_ids: tuple[int, ...]
    lease_key: str
    ask: A

    def under_lease(self, work: Callable[[Session], T]) -> T:
        """Run ``work(session)`` in the worker under this shard's lease."""
        return under_shard_lease(self.settings, self.lease_key, self.what, work)


def run_question_shards(
    sharding: ShardedPass,
    parent: str,
    what: str,
    *,
    run: GenerationRun,
    ask: A,
    fn: Callable[[QuestionShard[A]], R],
    done: Callable[[], Any],
) -> list[R]:
    """A pass over a stored run's responses in shards of its questions (label, judge).

    Every shard is a :class:`QuestionShard` of ``run`` carrying ``ask``; ``done()`` counts
    the run's responses the pass has finished (read from the database: every worker's),
    which ``sharding.progress(done, total)`` is told, ``total`` being the run's responses.
    """
    question_ids, total = run_questions(run.id, session=sharding.session)
    return run_coordinated(
        sharding,
        parent,
        what,
        fn=fn,
        tasks=lambda: [
            QuestionShard(
                sharding.settings, run.name, what, s.question_ids, s.lease_key(parent), ask
            )
            for s in shard_by_question(question_ids, per_shard=sharding.per_shard)
        ],
        total=total,
        done=done,
    )


def run_questions(run_id: int | None, *, session: Session) -> tuple[list[int], int]:
    """A run's question ids (each once) and its number of responses."""
    question_ids = session.exec(
        select(Response.question_id).where(Response.run_id == run_id).distinct()
    ).all()
    return list(question_ids), response_count(run_id, session=session)


def response_count(run_id: int | None, *, session: Session) -> int:
    """The responses stored for a run."""
    return int(session.exec(select(func.count()).where(Response.run_id == run_id)).one())


def responses_with(run_id: int | None, response_id: Any, *where: Any, session: Session) -> int:
    """The run's responses with a row in ``response_id``'s table that matches ``where``."""
    return int(
        session.exec(
            select(func.count(func.distinct(response_id)))
            .join(Response, col(Response.id) == col(response_id))
            .where(Response.run_id == run_id, *where)
        ).one()
    )
