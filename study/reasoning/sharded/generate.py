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

from dataclasses import dataclass

from sqlmodel import Session

from storage.models import GenerationRun
from storage.repo.runs import set_run_status
from storage.settings import Settings
from storage.workspace import open_workspace_session
from study.cluster.coordinator import RunStatus, ShardedPass, run_coordinated
from study.cluster.merge import merge_parts
from study.cluster.shards import shard_by_question
from study.reasoning.generation import (
    GenerationOptions,
    GenerationScope,
    GenerationSummary,
    ensure_run,
    resolve_run,
    run_generation,
)


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


def run_generation_sharded(
    options: GenerationOptions, *, sharding: ShardedPass
) -> GenerationSummary:
    """Generate (or resume) a run with its shards of questions on ``sharding.executor``.

    Args:
        options: What to generate (as for :func:`study.reasoning.generation.run_generation`).
        sharding: Where the shards run; its ``progress`` counts the run's stored responses
            over the plan, its ``on_plan`` gets the plan's size before the plan is built.

    Raises:
        InputError, ConfigError, ServiceError: as :func:`study.reasoning.generation.run_generation`,
            and a lost task (:mod:`study.cluster.ray_executor`).
    """
    session = sharding.session
    resolved = resolve_run(options, session=session)
    if sharding.on_plan is not None:
        sharding.on_plan(resolved.plan)
    shards = shard_by_question(
        [q.id for q in resolved.questions if q.id is not None], per_shard=sharding.per_shard
    )
    parent = f"generation_run:{options.run}"
    planned = len(resolved.questions) * (1 + len(resolved.chosen)) * options.samples
    run = RunStatus(session, _store_status)

    def before() -> None:
        made, _ = ensure_run(options, resolved, session=session)
        assert made.id is not None
        run.run_id = made.id
        set_run_status(made.id, "running", session=session)  # the final status: _store_status
        session.commit()

    def tasks() -> list[GenerateShardTask]:
        return [
            GenerateShardTask(
                settings=sharding.settings,
                options=options,
                scope=GenerationScope(
                    question_ids=frozenset(s.question_ids), lease_key=s.lease_key(parent)
                ),
            )
            for s in shards
        ]

    parts = run_coordinated(
        sharding,
        parent,
        f"Run {options.run!r}",
        fn=generate_shard,
        tasks=tasks,
        total=planned,
        done=run.stored_responses,
        before=before,
        after=run.after,
    )
    waits = [p.retry_after_s for p in parts if p.retry_after_s is not None]
    return merge_parts(
        GenerationSummary,
        parts,
        tallies=("parse_status", "failed_kinds"),
        run=options.run,
        model=resolved.info.spec,
        simulated=any(p.simulated for p in parts),
        status=run.status,
        retry_after_s=max(waits) if waits else None,
    )


def _store_status(run_id: int, status: str, *, session: Session) -> None:
    """Set the run's status as stored now (not committed)."""
    stored = session.get(GenerationRun, run_id, populate_existing=True)
    if stored is not None:
        stored.status = status
        session.add(stored)
