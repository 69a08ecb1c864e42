"""The input of the drift statistics: a table of pair distances as integer-coded arrays.

:class:`StatsInput` holds one row per (question, condition, sample) pair with its class,
model and metric columns; :func:`stats_input_from_columns` builds it from any table with
those columns (a pandas frame, a dict of arrays), coding the strings once. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

CONDITION_CLASSES: tuple[str, ...] = ("none", "noise", "attribute", "life_event", "other")


def json_number(x: Any) -> float | None:
    """JSON-safe float: NaN and ±inf become ``None``."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class StatsInput:
    """A validated drift table as integer codes and value columns.

    Attributes:
        question, condition, model: ``(N,)`` int64 codes.
        values: ``(N, M)`` float64 drift values, finite.
        metrics: metric names (columns of ``values``).
        condition_names, condition_classes: one entry per condition code.
        model_names: one entry per model code.
        sample: ``(N,)`` int64 sample codes or ``None``; ``sample_names`` names them.
        label_run: ``(N,)`` int64 codes of repeated labelings of the same response (for the
            labeler share of the noise decomposition) or ``None``.
    """

    question: NDArray[np.int64]
    condition: NDArray[np.int64]
    model: NDArray[np.int64]
    values: NDArray[np.float64]
    metrics: tuple[str, ...]
    condition_names: tuple[str, ...]
    condition_classes: tuple[str, ...]
    model_names: tuple[str, ...]
    sample: NDArray[np.int64] | None = None
    sample_names: tuple[str, ...] = ()
    label_run: NDArray[np.int64] | None = None


def category_codes(values: Any) -> tuple[NDArray[np.int64], tuple[str, ...]]:
    """Integer codes of ``values`` and the sorted distinct values they index."""
    arr = np.asarray(values)
    # numbers keep their numeric order (sample 10 after sample 2); the rest sort as text
    keys, inv = np.unique(arr if arr.dtype.kind in "iufb" else arr.astype(str), return_inverse=True)
    return inv.astype(np.int64), tuple(str(k) for k in keys)


def stats_input_from_columns(table: Any, *, metrics: Sequence[str] | None = None) -> StatsInput:
    """Build a :class:`StatsInput` from column arrays (a mapping or a DataFrame).

    Required columns: ``question_id``, ``condition``, ``condition_class`` and the metric
    columns (default: every other column except ``model`` and ``sample``).

    Raises:
        ValueError: a column is missing, a class is unknown or inconsistent, values are
            not finite.
    """
    columns = [str(c) for c in (table.columns if hasattr(table, "columns") else table.keys())]
    for col in ("question_id", "condition", "condition_class"):
        if col not in columns:
            raise ValueError(f"missing column {col!r}")
    reserved = {"question_id", "condition", "condition_class", "model", "sample", "label_run"}
    metric_names = tuple(metrics) if metrics else tuple(c for c in columns if c not in reserved)
    if not metric_names:
        raise ValueError("no metric columns")
    for m in metric_names:
        if m not in columns:
            raise ValueError(f"missing metric column {m!r}")
    q, _ = category_codes(table["question_id"])
    c, cnames = category_codes(table["condition"])
    klass = np.asarray(table["condition_class"]).astype(str)
    classes = []
    for j, name in enumerate(cnames):
        ks = np.unique(klass[c == j])
        if ks.size != 1:
            raise ValueError(f"condition {name!r} has more than one condition_class")
        if ks[0] not in CONDITION_CLASSES:
            raise ValueError(f"condition {name!r} has unknown class {ks[0]!r}")
        classes.append(str(ks[0]))
    if "model" in columns:
        mo, mnames = category_codes(table["model"])
    else:
        mo, mnames = np.zeros(q.size, dtype=np.int64), ("model",)
    sample: NDArray[np.int64] | None = None
    snames: tuple[str, ...] = ()
    if "sample" in columns:
        sample, snames = category_codes(table["sample"])
    label_run = category_codes(table["label_run"])[0] if "label_run" in columns else None
    vals = np.column_stack([np.asarray(table[m], dtype=np.float64) for m in metric_names])
    if not np.isfinite(vals).all():
        raise ValueError("metric values must be finite numbers")
    return StatsInput(
        question=q,
        condition=c,
        model=mo,
        values=vals,
        metrics=metric_names,
        condition_names=cnames,
        condition_classes=tuple(classes),
        model_names=mnames,
        sample=sample,
        sample_names=snames,
        label_run=label_run,
    )
