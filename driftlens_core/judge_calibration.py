"""A judge against the human majority: agreement with intervals, per-class rates, bias.

Pure functions on label arrays (no I/O): Cohen's κ over the full scale, the weighted κ and
the ordinal α on ordinal scales (nominal α otherwise) with item-bootstrap percentile
intervals, per-class TPR / TNR with Wilson intervals, the confusion matrix (rows human,
columns judge) and, on ordinal scales, the judge's mean bias (judge − human).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from driftlens_core.bootstrap import as_generator
from driftlens_core.proportions import proportion_interval

__all__ = ["ClassRates", "JudgeCalibration", "judge_calibration", "kappa_on_scale"]


@dataclass(frozen=True)
class ClassRates:
    """How the judge does on one class (the human label taken as the truth)."""

    label: Any
    n_positive: int
    n_negative: int
    tpr: float
    tpr_ci: tuple[float, float]
    tnr: float
    tnr_ci: tuple[float, float]


@dataclass(frozen=True)
class JudgeCalibration:
    """Judge vs human majority on one scale (``confusion[h][j]``: human ``h``, judge ``j``)."""

    levels: tuple[Any, ...]
    ordinal: bool
    n: int
    kappa: float
    kappa_ci: tuple[float, float]
    weighted_kappa: float | None
    weighted_kappa_ci: tuple[float, float] | None
    alpha: float
    alpha_ci: tuple[float, float]
    classes: tuple[ClassRates, ...]
    confusion: tuple[tuple[int, ...], ...]
    bias: float | None
    bias_ci: tuple[float, float] | None


def _confusion(h: np.ndarray, j: np.ndarray, k: int) -> np.ndarray:
    m = np.zeros((k, k))
    np.add.at(m, (h, j), 1.0)
    return m


def kappa_on_scale(h: np.ndarray, j: np.ndarray, k: int, weights: str | None = None) -> float:
    """Cohen's κ of level indices over the full scale of ``k`` levels (NaN when undefined).

    ``weights`` ``"quadratic"``/``"linear"`` weigh a disagreement by the distance of the
    level indices (sklearn's ``cohen_kappa_score(..., labels=range(k), weights=...)``).
    """
    m = _confusion(h, j, k)
    n = m.sum()
    if n == 0:
        return float("nan")
    expected = np.outer(m.sum(axis=1), m.sum(axis=0)) / n
    idx = np.arange(k)
    dist = np.abs(idx[:, None] - idx[None, :]).astype(float)
    if weights is None:
        w = (dist > 0).astype(float)
    else:
        w = dist**2 if weights == "quadratic" else dist
    denom = float(np.sum(w * expected))
    return float("nan") if denom == 0.0 else float(1.0 - np.sum(w * m) / denom)


def _alpha(h: np.ndarray, j: np.ndarray, k: int, ordinal: bool) -> float:
    import krippendorff

    data = np.vstack([h, j]).astype(float)
    if np.unique(data).size < 2:
        return float("nan")
    return float(
        krippendorff.alpha(
            reliability_data=data,
            level_of_measurement="ordinal" if ordinal else "nominal",
            value_domain=list(range(k)),
        )
    )


def _ci(values: np.ndarray, level: float) -> tuple[float, float]:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(v, [tail, 100 - tail])
    return (float(lo), float(hi))


def judge_calibration(
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    levels: Sequence[Any],
    ordinal: bool = False,
    n_boot: int = 2000,
    seed: int | np.random.Generator | None = None,
    level: float = 0.95,
) -> JudgeCalibration:
    """Calibrate a judge against human majority labels of the same items.

    Args:
        judge: The judge's label per item.
        human: The human majority label per item.
        levels: The full scale, in order (a level nobody used still counts).
        ordinal: Whether the scale is ordinal (weighted κ, ordinal α, bias).
        n_boot: Item-bootstrap replicates of the κ, weighted κ, α and bias intervals.
        seed: Seed or generator.
        level: Interval level.

    Raises:
        ValueError: unequal lengths, no item, or a label outside ``levels``.
    """
    if len(judge) != len(human) or len(judge) == 0:
        raise ValueError("judge and human need one label each per item, at least one item")
    index = {v: i for i, v in enumerate(levels)}
    bad = [v for v in (*judge, *human) if v not in index]
    if bad:
        raise ValueError(f"label {bad[0]!r} is not on the scale {list(levels)}")
    k = len(levels)
    j = np.array([index[v] for v in judge], dtype=np.int64)
    h = np.array([index[v] for v in human], dtype=np.int64)
    n = h.size
    rng = as_generator(seed)
    draws = rng.integers(0, n, size=(n_boot, n))
    values = np.array([float(v) for v in levels]) if ordinal else None

    def stats(hh: np.ndarray, jj: np.ndarray) -> tuple[float, float, float, float]:
        kap = kappa_on_scale(hh, jj, k)
        wk = kappa_on_scale(hh, jj, k, "quadratic") if ordinal else float("nan")
        al = _alpha(hh, jj, k, ordinal)
        bias = float(np.mean(values[jj] - values[hh])) if values is not None else float("nan")
        return kap, wk, al, bias

    point = stats(h, j)
    boot = np.array([stats(h[d], j[d]) for d in draws])
    m = _confusion(h, j, k).astype(int)
    classes = []
    for c, label in enumerate(levels):
        pos = h == c
        tp = int(np.sum(pos & (j == c)))
        tn = int(np.sum(~pos & (j != c)))
        pt = proportion_interval(tp, int(pos.sum()), level=level)
        pn = proportion_interval(tn, int((~pos).sum()), level=level)
        classes.append(
            ClassRates(
                label=label,
                n_positive=int(pos.sum()),
                n_negative=int((~pos).sum()),
                tpr=pt.share,
                tpr_ci=(pt.ci_low, pt.ci_high),
                tnr=pn.share,
                tnr_ci=(pn.ci_low, pn.ci_high),
            )
        )
    return JudgeCalibration(
        levels=tuple(levels),
        ordinal=ordinal,
        n=n,
        kappa=point[0],
        kappa_ci=_ci(boot[:, 0], level),
        weighted_kappa=point[1] if ordinal else None,
        weighted_kappa_ci=_ci(boot[:, 1], level) if ordinal else None,
        alpha=point[2],
        alpha_ci=_ci(boot[:, 2], level),
        classes=tuple(classes),
        confusion=tuple(tuple(int(x) for x in row) for row in m),
        bias=point[3] if ordinal else None,
        bias_ci=_ci(boot[:, 3], level) if ordinal else None,
    )
