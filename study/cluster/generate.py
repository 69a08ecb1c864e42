"""``generate`` on an executor: a coordinator over shards of questions.

The coordinator takes the run's lease (``generation_run:NAME``, the one a single-process
``generate`` takes, so the two exclude each other), creates or checks the run row, cuts
the questions into shards and hands them to the executor. Each shard task opens its own
session on the shared database, builds its own backend and runs
:func:`study.reasoning.generation.run_generation` on its questions under the shard's lease. Seeds
derive from (run seed, question, condition, sample) only, so the rows are those of the
single-process run whatever the shard a unit lands in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, select

from storage.models import GenerationRun, Response
from storage.repo.leases import acquire_lease, release_lease
from storage.repo.runs import set_run_status
from storage.settings import Settings
from storage.workspace import open_workspace_session
from study.cluster.coordinator import heartbeat_poll
from study.cluster.executors import Executor
from study.cluster.shards import DEFAULT_SHARD_QUESTIONS, shard_by_question
from study.reasoning.generation import (
    GenerationOptions,
    GenerationScope,
    GenerationSummary,
    ensure_run,
    resolve_run,
    run_generation,
)


#: Seconds between the coordinator's lease heartbeats while shards run.
@dataclass(frozen=True)
class GenerateShardTask:
    """What one shard task needs: where the database is, the run, its questions."""

    settings: Settings
    options: GenerationOptions
    scope: GenerationScope


def generate_shard(task: GenerateShardTask) -> GenerationSummary:
    """Run one shard (in a worker process): own session, own backend, own lease."""
    with open_workspace_session(task.settings, migrate=False) as session:
        return run_generation(task.options, session=session, scope=task.scope)


def merge_summaries(
    parts: Sequence[GenerationSummary], *, run: str, model: str, status: str
) -> GenerationSummary:
    """One summary of a run from its shards' summaries."""
    parse: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for p in parts:
        parse.update(p.parse_status)
        kinds.update(p.failed_kinds)
    waits = [p.retry_after_s for p in parts if p.retry_after_s is not None]
    return GenerationSummary(
        run=run,
        model=model,
        simulated=any(p.simulated for p in parts),
        planned=sum(p.planned for p in parts),
        already_done=sum(p.already_done for p in parts),
        requested=sum(p.requested for p in parts),
        succeeded=sum(p.succeeded for p in parts),
        failed=sum(p.failed for p in parts),
        status=status,
        parse_status=dict(sorted(parse.items())),
        failed_kinds=dict(sorted(kinds.items())),
        retry_after_s=max(waits) if waits else None,
    )


def run_generation_sharded(
    options: GenerationOptions,
    *,
    session: Session,
    settings: Settings,
    executor: Executor,
    per_shard: int = DEFAULT_SHARD_QUESTIONS,
    progress: Callable[[int, int], None] | None = None,
    on_plan: Callable[[str], None] | None = None,
) -> GenerationSummary:
    """Generate (or resume) a run with its shards on ``executor``.

    Args:
        options: What to generate (as for :func:`study.reasoning.generation.run_generation`).
        session: The coordinator's session.
        settings: The workspace settings every shard task opens its session with.
        executor: Who runs the shards.
        per_shard: Questions per shard.
        progress: ``progress(done, total)``: stored responses of the run over the plan,
            read from the database, so it counts every worker's answers.
        on_plan: Called with the plan's size as one line before the plan is built.

    Raises:
        InputError, ConfigError, ServiceError: as :func:`study.reasoning.generation.run_generation`,
            and a lost task (:mod:`study.cluster.ray_executor`).
    """
    resolved = resolve_run(options, session=session)
    if on_plan is not None:
        on_plan(resolved.plan)
    shards = shard_by_question(
        [q.id for q in resolved.questions if q.id is not None], per_shard=per_shard
    )
    parent = f"generation_run:{options.run}"
    lease = acquire_lease(parent, session=session, what=f"Run {options.run!r}")
    status = "interrupted"
    run_id: int | None = None
    try:
        run, _ = ensure_run(options, resolved, session=session)
        assert run.id is not None
        run_id = run.id
        set_run_status(run_id, "running", session=session)
        session.commit()
        planned = len(resolved.questions) * (1 + len(resolved.chosen)) * options.samples
        tasks = [
            GenerateShardTask(
                settings=settings,
                options=options,
                scope=GenerationScope(
                    question_ids=frozenset(s.question_ids), lease_key=s.lease_key(parent)
                ),
            )
            for s in shards
        ]

        def report() -> None:
            assert progress is not None
            progress(_stored(run_id or 0, session=session), planned)

        poll = heartbeat_poll(lease, session=session, report=report if progress else None)
        poll()
        parts = executor.map(generate_shard, tasks, poll=poll)
        summary = merge_summaries(
            parts,
            run=options.run,
            model=resolved.info.spec,
            status="done" if all(p.failed == 0 for p in parts) else "incomplete",
        )
        status = summary.status
        return summary
    finally:
        session.rollback()
        if run_id is not None:
            stored = session.get(GenerationRun, run_id, populate_existing=True)
            if stored is not None:
                stored.status = status
                session.add(stored)
            session.commit()
        release_lease(lease, session=session)


def _stored(run_id: int, *, session: Session) -> int:
    """Responses stored for the run so far (every worker's), in a fresh snapshot."""
    session.commit()
    return int(session.exec(select(func.count()).where(Response.run_id == run_id)).one())
