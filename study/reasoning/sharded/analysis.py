"""``analyze --chunk-questions N --executor ray|local``: each model's statistics in a task.

The out-of-core statistics (:func:`study.reasoning.out_of_core.stats_by_model`) reduce one
model at a time, and models share nothing but their random streams, which are spawned up
front from the seed (:func:`driftlens_core.analysis_slices.model_streams`). So each model
is one task: it reduces its model's drift part to its sufficient statistics and returns
the model's statistics. The coordinator has already written that part to build
``drift.csv``: where the worker can read it (the same host, or a shared filesystem) and its
sha256 matches, the task reduces that file instead of building the rows a second time; a
worker on a host that cannot see it rebuilds the part from the shared database, slice by
slice of questions, to the same bytes. The coordinator puts the statistics together in
model order, so ``stats.json`` is the one the one-process chunked and in-memory paths
write, byte for byte.

Why a model and not a slice of questions: two of a model's reductions, the noise rows'
mean and the sum of squares, are running totals added row after row; totals of slices
added afterwards would differ in the last bits, and every statistic with them.
"""

from __future__ import annotations

import hashlib
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
    part: str = ""
    part_sha256: str = ""


def file_sha256(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _readable_part(task: ModelStatsTask) -> Path | None:
    """The coordinator's part when this worker can read it unchanged, else None."""
    if not task.part:
        return None
    path = Path(task.part)
    try:
        return path if file_sha256(path) == task.part_sha256 else None
    except OSError:
        return None


def model_stats_task(task: ModelStatsTask) -> ModelStats:
    """One model's statistics (in a worker): its drift part, reduced.

    The part is the coordinator's file when this worker can read it (module docstring);
    otherwise it is rebuilt from the shared database.
    """
    from driftlens_core.analysis_slices import model_stats, model_streams
    from study.reasoning.out_of_core import index_parts, model_slices

    with tempfile.TemporaryDirectory(prefix="driftlens-model-") as tmp:
        parts = _part_of(task, Path(tmp))
        ((label, path),) = parts
        (index,), _ = index_parts(parts)
        model = model_slices(label, path, index, task.sample_names, task.chunk)
        rng = model_streams(task.seed, task.n_models)[task.position]
        try:
            return model_stats(model, rng, bootstrap=task.bootstrap)
        except ValueError as exc:
            raise InputError(str(exc)) from None


def _part_of(task: ModelStatsTask, tmp: Path) -> tuple[tuple[str, Path], ...]:
    """The model's drift part: the coordinator's, or rebuilt from the database into ``tmp``."""
    from storage.repo.runs import require_run
    from study.reasoning.out_of_core import build_drift_files

    shared = _readable_part(task)
    if shared is not None:
        return ((task.label, shared),)
    with open_workspace_session(task.settings, migrate=False) as session:
        version = session.get(OntologyVersion, task.version_id)
        assert version is not None
        built = build_drift_files(
            {task.label: require_run(task.run, session=session)},
            task.labeler,
            session=session,
            version=version,
            alpha=task.alpha,
            work=tmp,
            chunk=task.chunk,
        )
        return built.parts


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
            part=str(path.resolve()),
            part_sha256=file_sha256(path),
        )
        for i, (label, path) in enumerate(parts)
    ]
    session.commit()  # nothing of the coordinator's stays open while the tasks read
    models = executor.map(model_stats_task, tasks, poll=lambda: None)
    return StudyStats.of(models, n_boot=bootstrap, seed=seed, margin=SPECIFICITY_MARGIN).to_dict()
