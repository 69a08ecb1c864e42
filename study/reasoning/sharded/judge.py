"""``judge`` on an executor: shards of a run's questions judged by separate tasks.

The coordinator takes the judging lease ``judge_run:RUN:MODEL`` and hands out shards of
the run's questions; each task judges its shard's responses under the shard's lease with
:func:`study.reasoning.judges.judge_run`, which skips responses already scored by this judge and
upserts scores keyed by (response, judge, kind), so a retried shard stores nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm.specs import ModelSpec
from storage.models import JudgeScore
from storage.repo.runs import require_run
from study.cluster.coordinator import (
    QuestionShard,
    ShardedPass,
    responses_with,
    run_question_shards,
)
from study.reasoning.judges import JudgeSummary, judge_roles, judge_run, summarize_run


@dataclass(frozen=True)
class JudgeAsk:
    """What every shard of a judging pass asks: the judge and its requests in flight."""

    model: ModelSpec
    concurrency: int
    allow_self_judging: bool = False


def judge_shard(shard: QuestionShard[JudgeAsk]) -> JudgeSummary:
    """Judge one shard (in a worker process) under its lease."""
    return shard.under_lease(
        lambda session: judge_run(
            shard.run,
            shard.ask.model,
            session=session,
            concurrency=shard.ask.concurrency,
            question_ids=shard.question_ids,
            allow_self_judging=shard.ask.allow_self_judging,
        )
    )


def judge_run_sharded(
    run_name: str,
    model: ModelSpec,
    *,
    sharding: ShardedPass,
    concurrency: int = 16,
    allow_self_judging: bool = False,
) -> JudgeSummary:
    """Judge a run with its question shards on ``sharding.executor``.

    ``sharding.progress``: responses of the run with a score by this judge (every
    worker's, from the database) over the run's responses.

    Raises:
        NotFoundError: No such run.
        ConfigError: Another process judges this run.
    """
    session = sharding.session
    spec = str(model)  # the name its verdicts and roles are stored under
    run = require_run(run_name, session=session)
    judge_roles(run_name, spec, session=session, allow_self=allow_self_judging)  # before any shard
    parent = f"judge_run:{run_name}:{spec}"

    def judged() -> int:
        return responses_with(
            run.id, JudgeScore.response_id, JudgeScore.judge_model == spec, session=session
        )

    parts = run_question_shards(
        sharding,
        parent,
        f"Judging of {run_name!r}",
        run=run,
        ask=JudgeAsk(model, concurrency, allow_self_judging),
        fn=judge_shard,
        done=judged,
    )
    return summarize_run(run_name, spec, parts, session=session)
