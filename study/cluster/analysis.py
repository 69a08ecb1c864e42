"""``analyze --chunk-questions N --executor ray|local``: each model's statistics in a task.

The out-of-core statistics (:func:`study.reasoning.out_of_core.stats_by_model`) reduce one
model at a time, and models share nothing but their random streams, which are spawned up
front from the seed (:func:`driftlens_core.analysis_slices.model_streams`). So each model
is one task: it reads its run's trajectories from the shared database slice by slice of
questions, writes its drift part on the worker (the same rows, the same CSV text as the
coordinator's part), reduces it to its sufficient statistics and returns the model's
statistics. The coordinator puts them together in model order, so ``stats.json`` is the
one the one-process chunked and in-memory paths write, byte for byte.

Why a model and not a slice of questions: two of a model's reductions, the noise rows'
mean and the sum of squares, are running totals added row after row; totals of slices
added afterwards would differ in the last bits, and every statistic with them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session

from driftlens_core.analysis import ModelStats, StudyStats
from storage.errors import InputError
from storage.models import OntologyVersion
from storage.settings import Settings
from storage.workspace import open_workspace_session
from study.cluster.executors import Executor


@dataclass(frozen=True)
class StatsExecutor:
    """Where ``analyze`` computes its models' statistics, and the database they read."""

    executor: Executor
    settings: Settings


@dataclass(frozen=True)
class ModelStatsTask:
    """One model of an analysis: its run, and where it stands among the models."""

    settings: Settings
    label: str
    run: str
    labeler: str
    version_id: int
    alpha: float
    chunk: int
    bootstrap: int
    seed: int
    position: int
    n_models: int
    sample_names: tuple[str, ...]


def model_stats_task(task: ModelStatsTask) -> ModelStats:
    """One model's statistics (in a worker): its drift rows from the database, reduced."""
    from driftlens_core.analysis_slices import model_stats, model_streams
    from storage.repo.runs import require_run
    from study.reasoning.out_of_core import build_drift_files, index_parts, model_slices

    with (
        open_workspace_session(task.settings, migrate=False) as session,
        tempfile.TemporaryDirectory(prefix="driftlens-model-") as tmp,
    ):
        version = session.get(OntologyVersion, task.version_id)
        assert version is not None
        built = build_drift_files(
            {task.label: require_run(task.run, session=session)},
            task.labeler,
            session=session,
            version=version,
            alpha=task.alpha,
            work=Path(tmp),
            chunk=task.chunk,
        )
        ((label, path),) = built.parts
        (index,), _ = index_parts(built.parts)
        model = model_slices(label, path, index, task.sample_names, task.chunk)
        rng = model_streams(task.seed, task.n_models)[task.position]
        try:
            return model_stats(model, rng, bootstrap=task.bootstrap)
        except ValueError as exc:
            raise InputError(str(exc)) from None


def stats_on_executor(
    parts: Sequence[tuple[str, Path]],
    run_of: dict[str, Any],
    labeler: str,
    *,
    session: Session,
    settings: Settings,
    executor: Executor,
    version_id: int,
    alpha: float,
    bootstrap: int,
    seed: int,
    chunk: int,
) -> dict[str, Any]:
    """:func:`study.reasoning.out_of_core.stats_by_model` with one task per model.

    ``parts``: the coordinator's drift parts (model label, path), sorted: they fix the
    model order and the table's sample names; ``run_of``: model label to run.

    Raises:
        InputError: the table cannot be analysed (the sentence ``driftlens stats`` gives).
    """
    from driftlens_core.validity import SPECIFICITY_MARGIN
    from study.reasoning.out_of_core import index_parts

    _, sample_names = index_parts(parts)
    tasks = [
        ModelStatsTask(
            settings=settings,
            label=label,
            run=run_of[label].name,
            labeler=labeler,
            version_id=version_id,
            alpha=alpha,
            chunk=chunk,
            bootstrap=bootstrap,
            seed=seed,
            position=i,
            n_models=len(parts),
            sample_names=sample_names,
        )
        for i, (label, _path) in enumerate(parts)
    ]
    session.commit()  # nothing of the coordinator's stays open while the tasks read
    models = executor.map(model_stats_task, tasks, poll=lambda: None)
    return StudyStats.of(models, n_boot=bootstrap, seed=seed, margin=SPECIFICITY_MARGIN).to_dict()
