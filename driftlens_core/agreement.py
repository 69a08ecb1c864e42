"""Agreement between labelers (ontology studio, SPEC §5; human studies, SPEC §9).

Labels are any hashable values (strings, ints, ``(category, symbol)`` tuples); ``None``,
``NaN`` and ``""`` mean "not labeled" and are left out pairwise. The input layout is
``labels[labeler][item]``.

* **Pairwise exact match**: for every pair of labelers, the share of items both labeled
  on which they agree; the mean over pairs is the studio's agreement figure.
* **Cohen's κ** for two labelers: ``(p_o − p_e) / (1 − p_e)`` with ``p_e`` from the two
  marginal distributions. Undefined (NaN) when ``p_e = 1`` (both used one same category).
* **Krippendorff's α (nominal)** via the ``krippendorff`` package after mapping labels to
  integer codes (the package needs numbers). When every pairable value is the same
  category the expected disagreement is 0 and α = 0/0 is undefined: we return NaN rather
  than 1 (perfect agreement on a single category says nothing about reliability) and
  :class:`AgreementSummary` says why. With fewer than two pairable values α is NaN too.
* **Confusion counts**: for every item and every pair of labelers, one count for the
  unordered pair of labels given; the off-diagonal maximum is the "most confused pair" the
  refinement loop rewrites.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray


def _missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and v.strip() == ""


def _matrix(labels: Sequence[Sequence[Any]]) -> list[list[Hashable | None]]:
    rows = [list(r) for r in labels]
    if not rows:
        raise ValueError("labels must hold at least one labeler")
    n = len(rows[0])
    if any(len(r) != n for r in rows):
        raise ValueError("every labeler must have one entry per item (use None when missing)")
    return [[None if _missing(v) else v for v in r] for r in rows]


def _domain(rows: list[list[Hashable | None]]) -> dict[Hashable, int]:
    seen: dict[Hashable, int] = {}
    for r in rows:
        for v in r:
            if v is not None and v not in seen:
                seen[v] = len(seen)
    return seen


@dataclass(frozen=True)
class PairwiseAgreement:
    """Exact-match agreement of every labeler pair and their mean."""

    mean: float
    pairs: tuple[tuple[int, int, float, int], ...]  # (labeler i, labeler j, share, n items)


def pairwise_agreement(labels: Sequence[Sequence[Any]]) -> PairwiseAgreement:
    """Share of items on which each pair of labelers gives the same label.

    Args:
        labels: ``labels[labeler][item]``; missing labels are ``None``/NaN/"".

    Returns:
        A :class:`PairwiseAgreement`; ``mean`` is the unweighted mean over pairs with at
        least one shared item (NaN when there is none).
    """
    rows = _matrix(labels)
    pairs = []
    for i, j in itertools.combinations(range(len(rows)), 2):
        both = [
            (a, b) for a, b in zip(rows[i], rows[j], strict=True) if a is not None and b is not None
        ]
        share = sum(a == b for a, b in both) / len(both) if both else float("nan")
        pairs.append((i, j, share, len(both)))
    vals = [p[2] for p in pairs if p[3] > 0]
    return PairwiseAgreement(float(np.mean(vals)) if vals else float("nan"), tuple(pairs))


def cohens_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's κ of two labelers over the items both labeled (NaN when undefined)."""
    rows = _matrix([a, b])
    both = [
        (x, y) for x, y in zip(rows[0], rows[1], strict=True) if x is not None and y is not None
    ]
    if not both:
        return float("nan")
    n = len(both)
    p_o = sum(x == y for x, y in both) / n
    cats = _domain([[x for x, _ in both], [y for _, y in both]])
    pa = np.zeros(len(cats))
    pb = np.zeros(len(cats))
    for x, y in both:
        pa[cats[x]] += 1
        pb[cats[y]] += 1
    p_e = float((pa / n) @ (pb / n))
    if p_e >= 1.0:
        return float("nan")
    return float((p_o - p_e) / (1.0 - p_e))


@dataclass(frozen=True)
class KappaInterval:
    """Cohen's κ with a cluster-bootstrap percentile interval (NaN where undefined)."""

    n: int
    n_clusters: int
    kappa: float
    ci_low: float
    ci_high: float
    n_boot: int


def kappa_cluster_interval(
    a: Sequence[Any],
    b: Sequence[Any],
    clusters: Sequence[Hashable],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> KappaInterval:
    """Cohen's κ of two labelers and its interval from resampling whole clusters.

    Items of one cluster (e.g. the paraphrases and samples of one stem) are not
    independent, so the bootstrap draws clusters with replacement. Each cluster
    contributes its sufficient statistics (items, agreements, both marginals), and every
    replicate's κ follows from their weighted sums, so no item-level loop runs per draw.
    The point estimate is :func:`cohens_kappa`; the interval is the plain percentile one.
    Items either labeler left empty are dropped first.
    """
    from driftlens_core.bootstrap import cluster_bootstrap_sums, percentile_interval

    rows = _matrix([a, b, list(clusters)])
    keep = [i for i in range(len(rows[0])) if rows[0][i] is not None and rows[1][i] is not None]
    xa = [rows[0][i] for i in keep]
    xb = [rows[1][i] for i in keep]
    kappa = cohens_kappa(xa, xb)
    cl = _domain([[rows[2][i] for i in keep]])
    nan = float("nan")
    if not keep or math.isnan(kappa) or len(cl) < 2:
        return KappaInterval(len(keep), len(cl), kappa, nan, nan, n_boot)
    cats = _domain([xa, xb])
    k = len(cats)
    stats = np.zeros((len(cl), 2 + 2 * k))
    for i, x, y in zip(keep, xa, xb, strict=True):
        q = cl[rows[2][i]]
        stats[q, 0] += 1.0
        stats[q, 1] += float(x == y)
        stats[q, 2 + cats[x]] += 1.0
        stats[q, 2 + k + cats[y]] += 1.0
    sums = cluster_bootstrap_sums(stats, n_boot=n_boot, seed=seed)
    n = sums[:, 0]
    p_o = sums[:, 1] / n
    p_e = np.einsum("bk,bk->b", sums[:, 2 : 2 + k], sums[:, 2 + k :]) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = np.where(p_e < 1.0, (p_o - p_e) / (1.0 - p_e), np.nan)
    low, high = percentile_interval(reps, level)
    return KappaInterval(len(keep), len(cl), kappa, float(low[0]), float(high[0]), n_boot)


def encode_labels(
    labels: Sequence[Sequence[Any]],
) -> tuple[NDArray[np.float64], tuple[Hashable, ...]]:
    """Map labels to integer codes (float array, NaN = missing) and return the domain."""
    rows = _matrix(labels)
    dom = _domain(rows)
    data = np.array(
        [[np.nan if v is None else float(dom[v]) for v in r] for r in rows], dtype=np.float64
    )
    return data, tuple(dom)


def krippendorff_alpha(labels: Sequence[Sequence[Any]]) -> float:
    """Krippendorff's α for nominal labels (``krippendorff`` package; NaN when undefined).

    Args:
        labels: ``labels[labeler][item]``; any hashable labels, ``None``/NaN/"" missing.
    """
    import krippendorff

    data, dom = encode_labels(labels)
    pairable = ~np.isnan(data)
    units = pairable.sum(axis=0) >= 2
    if units.sum() == 0:
        return float("nan")
    used = np.unique(data[:, units][pairable[:, units]])
    if used.size < 2:
        return float("nan")  # one category: expected disagreement 0, α = 0/0
    return float(
        krippendorff.alpha(
            reliability_data=data,
            level_of_measurement="nominal",
            value_domain=list(range(len(dom))),
        )
    )


@dataclass(frozen=True)
class ConfusionCounts:
    """Counts of label pairs given to the same item by two labelers (symmetric)."""

    labels: tuple[Hashable, ...]
    counts: NDArray[np.int64]

    def most_confused_pair(self) -> tuple[Hashable, Hashable, int] | None:
        """The two distinct labels most often given to the same item, or ``None``."""
        off = np.triu(self.counts, 1)
        if off.size == 0 or off.max() == 0:
            return None
        i, j = np.unravel_index(int(np.argmax(off)), off.shape)
        return self.labels[int(i)], self.labels[int(j)], int(off[i, j])


def confusion_counts(labels: Sequence[Sequence[Any]]) -> ConfusionCounts:
    """Symmetric confusion counts over every item and labeler pair.

    Agreements add 1 on the diagonal; a disagreement (a, b) adds 1 to both ``[a, b]`` and
    ``[b, a]``, so the upper triangle counts each unordered confusion once.
    """
    rows = _matrix(labels)
    dom = _domain(rows)
    k = len(dom)
    counts = np.zeros((k, k), dtype=np.int64)
    for i, j in itertools.combinations(range(len(rows)), 2):
        for a, b in zip(rows[i], rows[j], strict=True):
            if a is None or b is None:
                continue
            x, y = dom[a], dom[b]
            counts[x, y] += 1
            if x != y:
                counts[y, x] += 1
    return ConfusionCounts(tuple(dom), counts)


@dataclass(frozen=True)
class AgreementSummary:
    """Pairwise exact match, Krippendorff's α and the most confused pair of labels."""

    pairwise: PairwiseAgreement
    alpha: float
    alpha_note: str
    confusion: ConfusionCounts
    n_items: int
    n_labelers: int


def agreement_summary(labels: Sequence[Sequence[Any]]) -> AgreementSummary:
    """All agreement measures of one labeling round (``labels[labeler][item]``)."""
    rows = _matrix(labels)
    alpha = krippendorff_alpha(rows)
    note = ""
    if math.isnan(alpha):
        used = {v for r in rows for v in r if v is not None}
        note = (
            "undefined: every label is the same category"
            if len(used) == 1
            else "undefined: fewer than two labels on any item"
        )
    return AgreementSummary(
        pairwise=pairwise_agreement(rows),
        alpha=alpha,
        alpha_note=note,
        confusion=confusion_counts(rows),
        n_items=len(rows[0]),
        n_labelers=len(rows),
    )
