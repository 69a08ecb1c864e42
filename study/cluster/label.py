"""``label`` on an executor: shards of a run's questions labeled by separate tasks.

The coordinator resolves the ontology version and the labeler row once (so tasks never
race to create it), takes the labeling lease ``label_run:RUN:LABELER`` and hands out
shards of the run's questions; each task labels its shard's responses under the shard's
lease with :func:`study.reasoning.trajectories.label_run`, which skips what is already
labeled and commits chunk by chunk, so a retried shard labels only what its dead
attempt had not committed (and the unique key of ``step_label`` refuses a repeat).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, col, select

from ontology.labelers.registry import ensure_labeler_spec
from ontology.versions import get_version
from storage.models import Response, StepLabel
from storage.repo.leases import acquire_lease, release_lease
from storage.repo.runs import require_run
from storage.settings import Settings
from study.cluster.coordinator import heartbeat_poll, under_shard_lease
from study.cluster.executors import Executor
from study.cluster.shards import DEFAULT_SHARD_QUESTIONS, shard_by_question
from study.reasoning.trajectories import LabelSummary, label_run


@dataclass(frozen=True)
class LabelShardTask:
    """One shard of a labeling pass."""

    settings: Settings
    run: str
    labeler: str
    ontology_version_id: int
    question_ids: tuple[int, ...]
    lease_key: str


def label_shard(task: LabelShardTask) -> LabelSummary:
    """Label one shard (in a worker process) under its lease."""
    return under_shard_lease(
        task.settings,
        task.lease_key,
        f"Labeling of {task.run!r}",
        lambda session: label_run(
            task.run,
            task.labeler,
            session=session,
            ontology_version=task.ontology_version_id,
            question_ids=task.question_ids,
        ),
    )


def merge_label_summaries(
    parts: Sequence[LabelSummary], *, run: str, labeler: str, version: str
) -> LabelSummary:
    """One summary of a labeling pass from its shards'."""
    return LabelSummary(
        run=run,
        labeler=labeler,
        ontology_version=version,
        responses=sum(p.responses for p in parts),
        labeled_now=sum(p.labeled_now for p in parts),
        already_labeled=sum(p.already_labeled for p in parts),
        steps_labeled=sum(p.steps_labeled for p in parts),
        unmapped_steps=sum(p.unmapped_steps for p in parts),
        without_steps=sum(p.without_steps for p in parts),
        failed=sum(p.failed for p in parts),
    )


def label_run_sharded(
    run_name: str,
    labeler_spec: str,
    *,
    session: Session,
    settings: Settings,
    executor: Executor,
    ontology_version: str | int | None = None,
    per_shard: int = DEFAULT_SHARD_QUESTIONS,
    progress: Callable[[int, int], None] | None = None,
) -> LabelSummary:
    """Label a run with its question shards on ``executor``.

    ``progress(done, total)`` counts responses of the run that have labels from this
    labeler and version, read from the database (every worker's), over the run's responses.

    Raises:
        NotFoundError: No such run or ontology version.
        ConfigError: The labeler spec is bad, or another process labels this run.
    """
    run = require_run(run_name, session=session)
    version = get_version(ontology_version, session=session)
    spec_row = ensure_labeler_spec(labeler_spec, session=session)
    session.commit()
    assert run.id is not None and version.id is not None and spec_row.id is not None
    question_ids = session.exec(
        select(Response.question_id).where(Response.run_id == run.id).distinct()
    ).all()
    total = int(session.exec(select(func.count()).where(Response.run_id == run.id)).one())
    parent = f"label_run:{run_name}:{labeler_spec}"
    lease = acquire_lease(parent, session=session, what=f"Labeling of {run_name!r}")
    try:
        tasks = [
            LabelShardTask(
                settings=settings,
                run=run_name,
                labeler=labeler_spec,
                ontology_version_id=version.id,
                question_ids=s.question_ids,
                lease_key=s.lease_key(parent),
            )
            for s in shard_by_question(question_ids, per_shard=per_shard)
        ]

        def report() -> None:
            assert progress is not None
            session.commit()  # a fresh snapshot: every worker's committed labels
            labeled = session.exec(
                select(func.count(func.distinct(StepLabel.response_id)))
                .join(Response, col(Response.id) == col(StepLabel.response_id))
                .where(Response.run_id == run.id)
                .where(StepLabel.labeler_id == spec_row.id)
                .where(StepLabel.ontology_version_id == version.id)
            ).one()
            progress(int(labeled), total)

        poll = heartbeat_poll(lease, session=session, report=report if progress else None)
        poll()
        parts = executor.map(label_shard, tasks, poll=poll)
    finally:
        session.rollback()
        release_lease(lease, session=session)
    return merge_label_summaries(
        parts,
        run=run_name,
        labeler=labeler_spec,
        version=f"{version.name}@{version.version}",
    )
