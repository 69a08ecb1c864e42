"""``label`` on an executor: shards of a run's questions labeled by separate tasks.

The coordinator resolves the ontology version and the labeler row once (so tasks never
race to create it), takes the labeling lease ``label_run:RUN:LABELER`` and hands out
shards of the run's questions; each task labels its shard's responses under the shard's
lease with :func:`study.reasoning.trajectories.label_run`, which skips what is already
labeled and commits chunk by chunk, so a retried shard labels only what its dead
attempt had not committed (and the unique key of ``step_label`` refuses a repeat).
"""

from __future__ import annotations

from dataclasses import dataclass

from ontology.labelers.registry import ensure_labeler_spec
from ontology.versions import get_version
from storage.models import StepLabel
from storage.repo.runs import require_run
from storage.settings import Settings
from study.cluster.coordinator import (
    ShardedPass,
    responses_with,
    run_question_shards,
    under_shard_lease,
)
from study.cluster.merge import merge_parts
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


def label_run_sharded(
    run_name: str,
    labeler_spec: str,
    *,
    sharding: ShardedPass,
    ontology_version: str | int | None = None,
) -> LabelSummary:
    """Label a run with its question shards on ``sharding.executor``.

    ``sharding.progress`` counts responses of the run that have labels from this labeler
    and version, read from the database (every worker's), over the run's responses.

    Raises:
        NotFoundError: No such run or ontology version.
        ConfigError: The labeler spec is bad, or another process labels this run.
    """
    session = sharding.session
    run = require_run(run_name, session=session)
    version = get_version(ontology_version, session=session)
    spec_row = ensure_labeler_spec(labeler_spec, session=session)
    session.commit()
    assert run.id is not None and version.id is not None and spec_row.id is not None
    parent = f"label_run:{run_name}:{labeler_spec}"
    version_id, labeler_id = version.id, spec_row.id

    def task_for(question_ids: tuple[int, ...], lease_key: str) -> LabelShardTask:
        return LabelShardTask(
            settings=sharding.settings,
            run=run_name,
            labeler=labeler_spec,
            ontology_version_id=version_id,
            question_ids=question_ids,
            lease_key=lease_key,
        )

    def labeled() -> int:
        return responses_with(
            run.id,
            StepLabel.response_id,
            StepLabel.labeler_id == labeler_id,
            StepLabel.ontology_version_id == version_id,
            session=session,
        )

    parts = run_question_shards(
        sharding,
        parent,
        f"Labeling of {run_name!r}",
        run_id=run.id,
        fn=label_shard,
        task_for=task_for,
        done=labeled,
    )
    return merge_parts(
        LabelSummary,
        parts,
        run=run_name,
        labeler=labeler_spec,
        ontology_version=f"{version.name}@{version.version}",
    )
