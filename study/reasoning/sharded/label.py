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

from ontology.labeler_roles import labeler_roles
from ontology.labelers.registry import ensure_labeler_spec
from ontology.versions import get_version
from storage.models import StepLabel
from storage.repo.runs import require_run
from study.cluster.coordinator import (
    QuestionShard,
    ShardedPass,
    responses_with,
    run_question_shards,
)
from study.cluster.merge import merge_parts
from study.reasoning.trajectories import LabelSummary, label_run


@dataclass(frozen=True)
class LabelAsk:
    """What every shard of a labeling pass asks: the labeler and the ontology version."""

    labeler: str
    ontology_version_id: int
    allow_self_judging: bool = False


def label_shard(shard: QuestionShard[LabelAsk]) -> LabelSummary:
    """Label one shard (in a worker process) under its lease."""
    return shard.under_lease(
        lambda session: label_run(
            shard.run,
            shard.ask.labeler,
            session=session,
            ontology_version=shard.ask.ontology_version_id,
            question_ids=shard.question_ids,
            allow_self_judging=shard.ask.allow_self_judging,
        )
    )


def label_run_sharded(
    run_name: str,
    labeler_spec: str,
    *,
    sharding: ShardedPass,
    ontology_version: str | int | None = None,
    allow_self_judging: bool = False,
) -> LabelSummary:
    """Label a run with its question shards on ``sharding.executor``.

    ``sharding.progress`` counts responses of the run that have labels from this labeler
    and version, read from the database (every worker's), over the run's responses.

    Raises:
        NotFoundError: No such run or ontology version.
        ConfigError: The labeler spec is bad, or another process labels this run.
        InputError: An LLM labeler is the run's model (``allow_self_judging`` false).
    """
    session = sharding.session
    run = require_run(run_name, session=session)
    labeler_roles(run_name, [labeler_spec], session=session, allow_self=allow_self_judging)
    version = get_version(ontology_version, session=session)
    spec_row = ensure_labeler_spec(labeler_spec, session=session)
    session.commit()
    assert run.id is not None and version.id is not None and spec_row.id is not None
    parent = f"label_run:{run_name}:{labeler_spec}"
    version_id, labeler_id = version.id, spec_row.id

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
        run=run,
        ask=LabelAsk(labeler_spec, version_id, allow_self_judging),
        fn=label_shard,
        done=labeled,
    )
    return merge_parts(
        LabelSummary,
        parts,
        run=run_name,
        labeler=labeler_spec,
        ontology_version=f"{version.name}@{version.version}",
    )
