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

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, col, select

from llm.types import ChatMessage
from storage.models import JudgeScore, Response
from storage.repo.runs import get_run, require_run, set_run_status
from storage.settings import Settings
from storage.workspace import open_workspace_session
from study.cluster.coordinator import run_coordinated
from study.cluster.executors import Executor
from study.cluster.shards import DEFAULT_SHARD_QUESTIONS, ShardScope, shard_keys
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
    judge: str
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


def merge_generation(
    parts: Sequence[ConflictGenerationSummary], *, run: str, model: str, status: str
) -> ConflictGenerationSummary:
    """One summary of a conflicts run from its shards'."""
    obs: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for p in parts:
        obs.update(p.observability)
        kinds.update(p.failed_kinds)
    return ConflictGenerationSummary(
        run=run,
        model=model,
        planned=sum(p.planned for p in parts),
        already_done=sum(p.already_done for p in parts),
        requested=sum(p.requested for p in parts),
        failed=sum(p.failed for p in parts),
        status=status,
        observability=dict(sorted(obs.items())),
        failed_kinds=dict(sorted(kinds.items())),
    )


def generate_conflicts_sharded(
    options: ConflictGenerationOptions,
    *,
    session: Session,
    settings: Settings,
    executor: Executor,
    per_shard: int = DEFAULT_SHARD_QUESTIONS,
    progress: Callable[[int, int], None] | None = None,
    on_plan: Callable[[str], None] | None = None,
) -> ConflictGenerationSummary:
    """Generate (or resume) a conflicts run with its bank shards on ``executor``.

    ``progress(done, total)``: the run's stored responses (every worker's) over the plan;
    ``on_plan`` gets the plan's size as one line before the run row is made.

    Raises:
        InputError, ConfigError: as :func:`study.conflicts.plan.generate_conflicts`.
        ServiceError: a lost task (:mod:`study.cluster.ray_executor`).
    """
    from study.conflicts.items import stored_instances
    from study.conflicts.plan import generate_conflicts

    parent = f"conflicts_run:{options.run}"
    banks = [q for q, _ in stored_instances(session=session)]
    planned = len(banks) * len(options.doses) * options.samples
    run_id, status = [0], ["interrupted"]  # set by before() and after()

    def before() -> None:
        # the options checked and the run row created here, once: no shard races to it
        setup = ShardScope[int](keys=frozenset(), lease_key=f"{parent}#setup")
        generate_conflicts(options, session=session, scope=setup, on_plan=on_plan)
        run = get_run(options.run, session=session)
        assert run is not None and run.id is not None
        run_id[0] = run.id
        set_run_status(run.id, "running", session=session)
        session.commit()

    def tasks() -> list[ConflictsGenerateTask]:
        return [
            ConflictsGenerateTask(
                settings, options, ShardScope(frozenset(g), f"{parent}#shard:{i}")
            )
            for i, g in enumerate(shard_keys(banks, per_shard=per_shard))
        ]

    def report() -> None:
        assert progress is not None
        session.commit()  # a fresh snapshot: every worker's committed responses
        stored = session.exec(select(func.count()).where(Response.run_id == run_id[0])).one()
        progress(int(stored), planned)

    def after(parts: list[ConflictGenerationSummary] | None) -> None:
        # the status a single process would leave: interrupted when the shards failed
        if parts is not None:
            status[0] = "done" if all(p.failed == 0 for p in parts) else "incomplete"
        if run_id[0]:
            set_run_status(run_id[0], status[0], session=session)
            session.commit()

    parts = run_coordinated(
        parent,
        f"Conflicts run {options.run!r}",
        session=session,
        executor=executor,
        fn=conflicts_generate_shard,
        tasks=tasks,
        report=report if progress else None,
        before=before,
        after=after,
    )
    from llm.specs import parse_spec

    return merge_generation(
        parts, run=options.run, model=parse_spec(options.model).spec, status=status[0]
    )


def merge_judging(
    parts: Sequence[ConflictJudgeSummary], *, run: str, judge: str
) -> ConflictJudgeSummary:
    """One summary of a judging pass from its shards'."""
    warnings = [p.repeat_warning for p in parts if p.repeat_warning]
    return ConflictJudgeSummary(
        run=run,
        judge=judge,
        requested=sum(p.requested for p in parts),
        skipped=sum(p.skipped for p in parts),
        ok=sum(p.ok for p in parts),
        repaired=sum(p.repaired for p in parts),
        errors=sum(p.errors for p in parts),
        failed=sum(p.failed for p in parts),
        repeat_warning=warnings[0] if warnings else None,
    )


def judge_conflicts_sharded(
    run_name: str,
    judge: str,
    *,
    session: Session,
    settings: Settings,
    executor: Executor,
    concurrency: int = 16,
    per_shard: int = DEFAULT_SHARD_QUESTIONS,
    progress: Callable[[int, int], None] | None = None,
) -> ConflictJudgeSummary:
    """Judge a conflicts run with its bank shards on ``executor``.

    ``progress(done, total)``: the run's answers with a D3 score by this judge (every
    worker's) over its answers.

    Raises:
        NotFoundError: No such run.
        ConfigError: Another process judges this run with this judge.
    """
    from study.conflicts.score import first_case_messages
    from study.limits import CONCURRENCY

    CONCURRENCY.check(concurrency)
    run = require_run(run_name, session=session)
    assert run.id is not None
    run_id = run.id
    banks = session.exec(
        select(Response.question_id).where(Response.run_id == run_id).distinct()
    ).all()
    total = int(session.exec(select(func.count()).where(Response.run_id == run_id)).one())
    parent = f"conflicts_judge:{run_name}:{judge}"

    def tasks() -> list[ConflictsJudgeTask]:
        basis = first_case_messages(run_name, judge, session=session)
        return [
            ConflictsJudgeTask(
                settings,
                run_name,
                judge,
                concurrency,
                ShardScope(frozenset(g), f"{parent}#shard:{i}"),
                basis,
            )
            for i, g in enumerate(shard_keys(banks, per_shard=per_shard))
        ]

    def report() -> None:
        assert progress is not None
        session.commit()  # a fresh snapshot: every worker's committed scores
        judged = session.exec(
            select(func.count(func.distinct(JudgeScore.response_id)))
            .join(Response, col(Response.id) == col(JudgeScore.response_id))
            .where(Response.run_id == run_id)
            .where(JudgeScore.judge_model == judge)
            .where(JudgeScore.kind == "conflict_d3")
        ).one()
        progress(int(judged), total)

    parts = run_coordinated(
        parent,
        f"Judging conflicts run {run_name!r} with {judge}",
        session=session,
        executor=executor,
        fn=conflicts_judge_shard,
        tasks=tasks,
        report=report if progress else None,
    )
    return merge_judging(parts, run=run_name, judge=judge)
