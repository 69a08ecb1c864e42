"""``conflicts generate`` and ``conflicts judge`` on an executor: shards of banks.

A conflicts run's natural unit is the bank (its question id): every dose and sample of a
bank land in one shard. Seeds and shuffles derive from (run seed, instance, condition,
sample) only (:mod:`study.conflicts.plan`), so a bank's responses are the same whichever
shard asks them. The coordinator takes the run's lease (``conflicts_run:RUN``, the one a
single-process ``conflicts generate`` takes), checks the options and creates the run row
with an empty scope (nothing is asked), marks the run running, hands out the shards and
sets the final status; each shard task calls :func:`study.conflicts.plan.generate_conflicts`
with its scope. Judging is the same with ``conflicts_judge:RUN:JUDGE`` and the answers of
a shard's banks.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm.specs import ModelSpec
from llm.types import ChatMessage
from storage.models import JudgeScore
from storage.repo.runs import get_run, require_run, set_run_status
from storage.settings import Settings
from storage.workspace import open_workspace_session
from study.cluster.coordinator import (
    RunStatus,
    ShardedPass,
    responses_with,
    run_coordinated,
    run_questions,
)
from study.cluster.merge import merge_parts
from study.cluster.shards import ShardScope, shard_scopes
from study.conflicts.plan import ConflictGenerationOptions, ConflictGenerationSummary
from study.conflicts.score import ConflictJudgeSummary


@dataclass(frozen=True)
class ConflictsGenerateTask:
    """One shard of a conflicts run: its banks."""

    settings: Settings
    options: ConflictGenerationOptions
    scope: ShardScope[int]


@dataclass(frozen=True)
class ConflictsJudgeTask:
    """One shard of a conflicts judging pass: the answers to its banks."""

    settings: Settings
    run: str
    judge: ModelSpec
    concurrency: int
    scope: ShardScope[int]
    #: the run's first case: every shard stores its settings, as one process would
    settings_basis: tuple[ChatMessage, ...] | None = None


def conflicts_generate_shard(task: ConflictsGenerateTask) -> ConflictGenerationSummary:
    """Generate one shard's banks (in a worker process): own session and backend."""
    from study.conflicts.plan import generate_conflicts

    with open_workspace_session(task.settings, migrate=False) as session:
        return generate_conflicts(task.options, session=session, scope=task.scope)


def conflicts_judge_shard(task: ConflictsJudgeTask) -> ConflictJudgeSummary:
    """Judge one shard's answers (in a worker process)."""
    from study.conflicts.score import judge_conflict_run

    with open_workspace_session(task.settings, migrate=False) as session:
        return judge_conflict_run(
            task.run,
            task.judge,
            session=session,
            concurrency=task.concurrency,
            scope=task.scope,
            settings_basis=task.settings_basis,
        )


def generate_conflicts_sharded(
    options: ConflictGenerationOptions, *, sharding: ShardedPass
) -> ConflictGenerationSummary:
    """Generate (or resume) a conflicts run with its bank shards on ``sharding.executor``.

    ``sharding.progress``: the run's stored responses (every worker's) over the plan.

    Raises:
        InputError, ConfigError: as :func:`study.conflicts.plan.generate_conflicts`.
        ServiceError: a lost task (:mod:`study.cluster.ray_executor`).
    """
    from study.conflicts.items import stored_instances
    from study.conflicts.plan import generate_conflicts

    session = sharding.session
    parent = f"conflicts_run:{options.run}"
    banks = [q for q, _ in stored_instances(session=session)]
    planned = len(banks) * len(options.doses) * options.samples
    run = RunStatus(session, set_run_status)

    def before() -> None:
        # the options checked and the run row created here, once: no shard races to it
        setup = ShardScope[int](keys=frozenset(), lease_key=f"{parent}#setup")
        generate_conflicts(options, session=session, scope=setup, on_plan=sharding.on_plan)
        made = get_run(options.run, session=session)
        assert made is not None and made.id is not None
        run.running(made.id)

    def tasks() -> list[ConflictsGenerateTask]:
        return [
            ConflictsGenerateTask(sharding.settings, options, scope)
            for scope in shard_scopes(banks, parent, per_shard=sharding.per_shard)
        ]

    parts = run_coordinated(
        sharding,
        parent,
        f"Conflicts run {options.run!r}",
        fn=conflicts_generate_shard,
        tasks=tasks,
        total=planned,
        done=run.stored_responses,
        before=before,
        after=run.after,
    )
    return merge_parts(
        ConflictGenerationSummary,
        parts,
        tallies=("observability", "failed_kinds"),
        run=options.run,
        model=options.model.spec,
        status=run.status,
    )


def judge_conflicts_sharded(
    run_name: str,
    judge: ModelSpec,
    *,
    sharding: ShardedPass,
    concurrency: int = 16,
    allow_self_judging: bool = False,
) -> ConflictJudgeSummary:
    """Judge a conflicts run with its bank shards on ``sharding.executor``.

    ``sharding.progress``: the run's answers with a D3 score by this judge (every
    worker's) over its answers.

    Raises:
        NotFoundError: No such run.
        ConfigError: Another process judges this run with this judge.
        InputError: The judge is the run's model (``allow_self_judging`` false).
    """
    from study.conflicts.score import first_case_messages, judge_role
    from study.limits import CONCURRENCY

    session = sharding.session
    CONCURRENCY.check(concurrency)
    run = require_run(run_name, session=session)
    name = str(judge)  # the judge's name in the lease, its role and its scores
    judge_role(run_name, name, session=session, allow_self=allow_self_judging)
    banks, total = run_questions(run.id, session=session)
    parent = f"conflicts_judge:{run_name}:{name}"

    def tasks() -> list[ConflictsJudgeTask]:
        basis = first_case_messages(run_name, name, session=session)
        return [
            ConflictsJudgeTask(sharding.settings, run_name, judge, concurrency, scope, basis)
            for scope in shard_scopes(banks, parent, per_shard=sharding.per_shard)
        ]

    def judged() -> int:
        return responses_with(
            run.id,
            JudgeScore.response_id,
            JudgeScore.judge_model == name,
            JudgeScore.kind == "conflict_d3",
            session=session,
        )

    parts = run_coordinated(
        sharding,
        parent,
        f"Judging conflicts run {run_name!r} with {judge}",
        fn=conflicts_judge_shard,
        tasks=tasks,
        total=total,
        done=judged,
    )
    warnings = [p.repeat_warning for p in parts if p.repeat_warning]
    return merge_parts(
        ConflictJudgeSummary,
        parts,
        run=run_name,
        judge=name,
        repeat_warning=warnings[0] if warnings else None,
    )
