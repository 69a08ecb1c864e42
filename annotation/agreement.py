"""Agreement results every study kind may report: two raters on labels, and on ratings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def nan_to_none(x: float) -> float | None:
    """``x`` as a float, or ``None`` when it is NaN (JSON and tables show no NaN)."""
    return None if math.isnan(x) else float(x)


@dataclass(frozen=True)
class LabelAgreement:
    """Agreement of two labellers of the same items on a nominal label (bank observability).

    ``rater_a``/``rater_b``: ``annotator 1``/``annotator 2`` (the first two kept votes of
    each item), ``humans`` (the agreed human label: two votes or more, all equal) or
    ``extractor`` (the memory system's own label, carried with the task).
    """

    rater_a: str
    rater_b: str
    n: int
    exact: float | None
    kappa: float | None


@dataclass(frozen=True)
class RatingAgreement:
    """Agreement of the reviewers on the counted items of a rating study.

    ``alpha_ordinal``: Krippendorff's α at the ordinal level over every reviewer's kept
    ratings; ``pairs`` … ``qwk``: the first two kept ratings of each item against each
    other (exact, within one step, mean absolute difference, quadratic-weighted κ).
    """

    min_ratings: int
    items: int
    left_out: int
    reviewers: int
    alpha_ordinal: float | None
    pairs: int
    exact: float | None
    within_one: float | None
    mae: float | None
    qwk: float | None


def label_agreement(rater_a: str, rater_b: str, pairs: Sequence[tuple[str, str]]) -> LabelAgreement:
    """Exact agreement and Cohen's κ of label pairs (``None`` where undefined)."""
    from driftlens_core.agreement import cohens_kappa

    if not pairs:
        return LabelAgreement(rater_a, rater_b, 0, None, None)
    kappa = cohens_kappa([a for a, _ in pairs], [b for _, b in pairs])
    return LabelAgreement(
        rater_a,
        rater_b,
        len(pairs),
        sum(a == b for a, b in pairs) / len(pairs),
        None if math.isnan(kappa) else kappa,
    )
