"""``judge`` on an executor: shards of a run's questions judged by separate tasks.

The coordinator takes the judging lease ``judge_run:RUN:MODEL`` and hands out shards of
the run's questions; each task judges its shard's responses under the shard's lease with
:func:`study.reasoning.judges.judge_run`, which skips responses already scored by this judge and
upserts scores keyed by (response, judge, kind), so a retried shard stores nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm.specs import parse_spec
from storage.models import JudgeScore
from storage.repo.runs import require_run
from storage.settings import Settings
from study.cluster.coordinator import (
    ShardedPass,
    responses_with,
    run_question_shards,
    under_shard_lease,
)
from study.reasoning.judges import JudgeSummary, judge_run, summarize_run


@dataclass(frozen=True)
class JudgeShardTask:
    """One shard of a judging pass."""

    settings: Settings
    run: str
    model: str
    concurrency: int
    question_ids: tuple[int, ...]
    lease_key: str


def judge_shard(task: JudgeShardTask) -> JudgeSummary:
    """Judge one shard (in a worker process) under its lease."""
    return under_shard_lease(
        task.settings,
        task.lease_key,
        f"Judging of {task.run!r}",
        lambda session: judge_run(
            task.run,
            task.model,
            session=session,
            concurrency=task.concurrency,
            question_ids=task.question_ids,
        ),
    )


def judge_run_sharded(
    run_name: str, model: str, *, sharding: ShardedPass, concurrency: int = 16
) -> JudgeSummary:
    """Judge a run with its question shards on ``sharding.executor``.

    ``sharding.progress``: responses of the run with a score by this judge (every
    worker's, from the database) over the run's responses.

    Raises:
        NotFoundError: No such run.
        ConfigError: A malformed judge spec, or another process judges this run.
    """
    session = sharding.session
    spec = parse_spec(model).spec
    run = require_run(run_name, session=session)
    parent = f"judge_run:{run_name}:{spec}"

    def task_for(question_ids: tuple[int, ...], lease_key: str) -> JudgeShardTask:
        return JudgeShardTask(
            settings=sharding.settings,
            run=run_name,
            model=spec,
            concurrency=concurrency,
            question_ids=question_ids,
            lease_key=lease_key,
        )

    def judged() -> int:
        return responses_with(
            run.id, JudgeScore.response_id, JudgeScore.judge_model == spec, session=session
        )

    parts = run_question_shards(
        sharding,
        parent,
        f"Judging of {run_name!r}",
        run_id=run.id,
        fn=judge_shard,
        task_for=task_for,
        done=judged,
    )
    return summarize_run(run_name, spec, parts, session=session)
