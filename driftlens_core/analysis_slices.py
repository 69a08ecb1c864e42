"""The statistics of a drift table read one model, and one slice of questions, at a time.

:func:`driftlens_core.analysis.analyze_by_model` needs each model's rows in memory; here a
model is handed over as a :class:`ModelSlices`, whose slices of questions are read twice
and reduced to per-question sums (:mod:`driftlens_core.row_sums`), so memory is bounded by
one slice and the model's per-question arrays. The result is the one
:func:`driftlens_core.analysis.analyze_table` gives on the whole table, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from driftlens_core.analysis import ModelStats, StudyStats, _model_from_sums
from driftlens_core.bootstrap import DEFAULT_BOOTSTRAP, Seed, as_generator
from driftlens_core.row_sums import RowChunk, reduce_rows
from driftlens_core.validity import SPECIFICITY_MARGIN


@dataclass(frozen=True)
class ModelSlices:
    """One model of a drift table, as slices of its questions.

    Attributes:
        name: the model's name.
        condition_names, condition_classes: the model's conditions, in code order (the
            names sorted, as the whole table codes them).
        metrics: metric columns, in the table's order.
        n_questions: the model's questions.
        sample_names: the table's sample names (``()``: no sample column).
        labeled: the table has a label-run column.
        slices: returns the model's :class:`RowChunk` slices in question order, each time
            it is called.
    """

    name: str
    condition_names: tuple[str, ...]
    condition_classes: tuple[str, ...]
    metrics: tuple[str, ...]
    n_questions: int
    sample_names: tuple[str, ...]
    labeled: bool
    slices: Callable[[], Iterable[RowChunk]]


def analyze_model_slices(
    models: Iterable[ModelSlices],
    *,
    n_models: int,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: Seed = None,
    alpha: float = 0.05,
    margin: float = SPECIFICITY_MARGIN,
) -> StudyStats:
    """:func:`driftlens_core.analysis.analyze_table` of models handed over in slices.

    Args:
        models: the models in the order of their codes in the whole table (sorted names).
        n_models: how many there are (the random streams are spawned up front, as
            ``analyze_table`` spawns them).
        bootstrap: cluster-bootstrap replicates ``B``.
        seed: integer seed or ``numpy.random.Generator``.
        alpha: level for BH decisions, letters and specificity.
        margin: equivalence margin (d_rel) of the specificity check.

    Raises:
        ValueError: no models, a model without noise rows, or a table that cannot be
            analysed.
    """
    if n_models < 1:
        raise ValueError("the table has no rows")
    if bootstrap < 1:
        raise ValueError("bootstrap must be at least 1")
    results = [
        model_stats(model, rng, bootstrap=bootstrap, alpha=alpha, margin=margin)
        for model, rng in zip(models, model_streams(seed, n_models), strict=True)
    ]
    return StudyStats.of(results, n_boot=bootstrap, seed=seed, margin=margin)


def model_streams(seed: Seed, n_models: int) -> list[np.random.Generator]:
    """Each model's random stream, spawned up front as ``analyze_table`` spawns them.

    With an integer seed the same streams come out every time, so model ``i``'s
    statistics can be computed anywhere (a Ray task) from ``model_streams(seed, n)[i]``.
    """
    root = as_generator(seed)
    return root.spawn(n_models) if n_models > 1 else [root]


def model_stats(
    model: ModelSlices,
    rng: np.random.Generator,
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    alpha: float = 0.05,
    margin: float = SPECIFICITY_MARGIN,
) -> ModelStats:
    """One model's statistics from its slices, on its own stream (:func:`model_streams`).

    Raises:
        ValueError: the model has no noise rows, or cannot be analysed.
    """
    noise = np.array([k == "noise" for k in model.condition_classes])
    if not noise.any():
        raise ValueError(f"model {model.name!r} has no noise rows: the floor cannot be estimated")
    has_sample = bool(model.sample_names)
    sums = reduce_rows(
        model.slices,
        n_questions=model.n_questions,
        noise=noise,
        n_metrics=len(model.metrics),
        labeled=model.labeled and has_sample,
    )
    return _model_from_sums(
        sums,
        model.name,
        names=model.condition_names,
        classes=model.condition_classes,
        metrics=model.metrics,
        sample_names=model.sample_names,
        has_sample=has_sample,
        n_boot=bootstrap,
        rng=rng,
        alpha=alpha,
        margin=margin,
    )
