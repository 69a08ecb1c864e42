"""Agreement of two raters on an ordinal scale (rubric scores such as 0–4).

Rubric judges and human annotators mostly disagree by one step, so exact agreement alone
undersells them. For two raters ``a`` and ``b`` scoring the same items (``None``/NaN =
not scored; such items are left out pairwise):

* **exact agreement**: share of items with ``a == b``;
* **within-k agreement**: share with ``|a − b| ≤ k`` (k = 1: "within one");
* **mean absolute difference** (MAE): mean of ``|a − b|``;
* **weighted Cohen's κ**: ``1 − Σ w·O / Σ w·E`` with ``O`` the observed joint
  distribution, ``E`` the outer product of the two marginals and weights
  ``w_ij = (v_i − v_j)²`` (quadratic) or ``|v_i − v_j|`` (linear) on the score *values*
  ``v`` — scikit-learn's ``cohen_kappa_score(..., labels=<the full scale>)``, which the
  tests use as the oracle. The distance is the values', not the rank among the levels
  that happen to occur: with scores {0, 1, 4} a 1→4 disagreement is three steps of the
  0–4 scale (0.583), not one step of a three-level scale (0.625, what sklearn gives
  without ``labels=``). Levels nobody used add nothing to either sum, so the full scale
  need not be passed;
* **Krippendorff's α (ordinal)** over any number of raters, via the ``krippendorff``
  package with the *numeric* values as the ordered domain (codes from a first-seen
  mapping would scramble the order).

κ and α are NaN when undefined (every score the same value: the expected disagreement is
0 and the ratio 0/0 says nothing about reliability).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: One rater's scores: an array, or a sequence that may hold ``None`` (not scored).
Scores: TypeAlias = ArrayLike | Sequence[float | None]

Weights = Literal["quadratic", "linear"]


def _pairs(a: Scores, b: Scores) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The items both raters scored, as float arrays."""
    x = np.array([np.nan if v is None else float(v) for v in np.ravel(np.asarray(a, dtype=object))])
    y = np.array([np.nan if v is None else float(v) for v in np.ravel(np.asarray(b, dtype=object))])
    if x.shape != y.shape:
        raise ValueError("both raters need one entry per item (use None when missing)")
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep]


def exact_agreement(a: Scores, b: Scores) -> float:
    """Share of jointly scored items on which the two raters give the same score."""
    x, y = _pairs(a, b)
    return float(np.mean(x == y)) if x.size else float("nan")


def within_k_agreement(a: Scores, b: Scores, k: float = 1) -> float:
    """Share of jointly scored items whose scores differ by at most ``k``."""
    x, y = _pairs(a, b)
    return float(np.mean(np.abs(x - y) <= k)) if x.size else float("nan")


def mean_absolute_difference(a: Scores, b: Scores) -> float:
    """Mean of ``|a − b|`` over jointly scored items."""
    x, y = _pairs(a, b)
    return float(np.mean(np.abs(x - y))) if x.size else float("nan")


def weighted_kappa(a: Scores, b: Scores, weights: Weights = "quadratic") -> float:
    """Weighted Cohen's κ of two raters (scikit-learn's definition; NaN when undefined).

    Args:
        a: First rater's scores (``None``/NaN = not scored).
        b: Second rater's scores, same items.
        weights: ``"quadratic"`` (the rubric default) or ``"linear"``.
    """
    x, y = _pairs(a, b)
    if not x.size:
        return float("nan")
    levels = np.unique(np.concatenate([x, y]))
    k = levels.size
    xi = np.searchsorted(levels, x)
    yi = np.searchsorted(levels, y)
    observed = np.zeros((k, k))
    np.add.at(observed, (xi, yi), 1.0)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    # distances on the scale's values (see the module docstring), not the levels' ranks
    dist = np.abs(levels[:, None] - levels[None, :])
    w = dist**2 if weights == "quadratic" else dist
    denom = float(np.sum(w * expected))
    if denom == 0.0:
        return float("nan")
    return float(1.0 - np.sum(w * observed) / denom)


def krippendorff_alpha_ordinal(labels: Sequence[Sequence[float | int | None]]) -> float:
    """Krippendorff's α at the ordinal level (``labels[rater][item]``; NaN when undefined).

    Args:
        labels: Numeric scores per rater and item; ``None``/NaN = not scored.
    """
    import krippendorff

    data = np.array(
        [[np.nan if v is None else float(v) for v in row] for row in labels], dtype=np.float64
    )
    if data.ndim != 2 or data.shape[0] < 2:
        return float("nan")
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return float("nan")
    sub = data[:, pairable]
    used = np.unique(sub[~np.isnan(sub)])
    if used.size < 2:
        return float("nan")  # one value: expected disagreement 0, α = 0/0
    domain = sorted(set(np.unique(data[~np.isnan(data)]).tolist()))
    return float(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=domain
        )
    )


@dataclass(frozen=True)
class OrdinalAgreement:
    """Every ordinal agreement measure of two raters over their jointly scored items."""

    n: int
    exact: float
    within_one: float
    mae: float
    qwk: float
    alpha_ordinal: float

    def to_dict(self) -> dict[str, float | int | None]:
        """JSON-ready (NaN becomes ``None``)."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in asdict(self).items()
        }


def ordinal_agreement(a: Scores, b: Scores) -> OrdinalAgreement:
    """Exact, within-one, MAE, quadratic-weighted κ and ordinal α of two raters."""
    x, y = _pairs(a, b)
    if not x.size:
        nan = float("nan")
        return OrdinalAgreement(0, nan, nan, nan, nan, nan)
    return OrdinalAgreement(
        n=int(x.size),
        exact=exact_agreement(x, y),
        within_one=within_k_agreement(x, y, 1),
        mae=mean_absolute_difference(x, y),
        qwk=weighted_kappa(x, y, "quadratic"),
        alpha_ordinal=krippendorff_alpha_ordinal([x.tolist(), y.tolist()]),
    )
