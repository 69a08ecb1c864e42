"""``B − A`` calibrated to both runs' human slices, for any instrument's ``driftlens compare``.

An adapter that can read a pulled human slice puts, in its :class:`RunData`'s ``extra``,
one :class:`driftlens_core.ppi.PPIArm` per ``"JUDGE|STATISTIC|SCOPE"`` (the judge or
classifier, the statistic's name, its scope); :func:`calibrated_rows` pairs the two runs'
arms of the same key (clustered by the arms' own cluster labels: a question, instance or
stem shared by both runs is one cluster) into a calibrated difference beside the model-only
rows. An adapter whose run data carry their arms otherwise builds each row with
:func:`calibrated_row`.

One code path with the instruments' headlines: each run's value is
:func:`~driftlens_core.ppi.ppi_mean_jackknife` of its arm (the estimator every instrument's
calibrated headline reports, so the row's ``A`` and ``B`` are those headlines), the
difference is :func:`~driftlens_core.ppi.ppi_difference_jackknife` (a question dropped from
both runs at once, so the pairing is in the variance) with its ``t`` interval on (questions
holding a human label − 1) degrees of freedom and the jackknife's acceleration, and the
p-value inverts that interval (:func:`~driftlens_core.ppi.interval_p_value`). Rows
where either run's headline would be model-only (too few humans) are left out: the
model-only rows stay the comparison's headline there.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from driftlens_core.ppi import (
    PPIArm,
    PPIEstimate,
    enough_humans,
    interval_p_value,
    ppi_difference_jackknife,
    ppi_mean_jackknife,
)
from study.compare.types import Kind, RunData, StatRow

#: The ``test`` of a calibrated row: the jackknife difference's t test.
CALIBRATED_TEST = "PPI++ jackknife t"


def _headline(arm: PPIArm) -> PPIEstimate:
    return ppi_mean_jackknife(arm.model, arm.human, inclusion=arm.inclusion, cluster=arm.cluster)


def calibrated_row(
    a: RunData,
    b: RunData,
    *,
    statistic: str,
    scope: str,
    arm_a: PPIArm,
    arm_b: PPIArm,
    kind: Kind = "ordinal",
    enough: Callable[[PPIEstimate], bool] = enough_humans,
    by_question: bool = False,
    digits: int = 3,
) -> StatRow | None:
    """``B − A`` of one statistic calibrated to both runs' slices, or ``None`` (too few).

    Args:
        a: Run A.
        b: Run B.
        statistic: The row's statistic name.
        scope: The row's scope.
        arm_a: Run A's items of the statistic (model labels, humans, probabilities, clusters).
        arm_b: Run B's.
        kind: The statistic's kind.
        enough: The instrument's rule for a calibrated headline (default: at least
            :data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` human labels on as many questions).
        by_question: The detail counts human-labelled questions (the unit the instrument's
            humans label), not human labels.
        digits: Decimals of the values in the detail.
    """
    ea, eb = _headline(arm_a), _headline(arm_b)
    if not (enough(ea) and enough(eb)):
        return None
    d = ppi_difference_jackknife(arm_b, arm_a)
    p = interval_p_value(d)  # the level at which 0 is an end of the row's own interval
    n_a = ea.n_human_clusters if by_question else ea.n_human
    n_b = eb.n_human_clusters if by_question else eb.n_human
    unit = "human-labelled questions" if by_question else "human labels"

    def ci(e: PPIEstimate) -> str:
        return f"{e.estimate:.{digits}f} [{e.ci[0]:.{digits}f}, {e.ci[1]:.{digits}f}]"

    return StatRow(
        run_a=a.name,
        run_b=b.name,
        statistic=statistic,
        scope=scope,
        kind=kind,
        value_a=ea.estimate,
        value_b=eb.estimate,
        diff=d.estimate,
        ci_low=d.ci[0],
        ci_high=d.ci[1],
        se=d.se,
        p_boot=p,
        test=CALIBRATED_TEST,
        p_test=p,
        test_detail=(
            f"A {ci(ea)}, B {ci(eb)} calibrated; {n_a} + {n_b} {unit}, lambda {d.lam:.2f}; "
            f"model-only B - A {d.model_only:.{digits}f}"
        ),
        mdd=math.nan,
        margin=math.nan,
        tost_p=math.nan,
        n_items=d.n_clusters,
    )


def calibrated_rows(a: RunData, b: RunData, *, kind: Kind = "ordinal") -> list[StatRow]:
    """``B − A`` of each statistic both runs have a human slice for (:func:`calibrated_row`).

    ``p_boot`` holds the row's p so it takes part in the family's BH adjustment.
    """
    arms_a = a.extra if isinstance(a.extra, dict) else {}
    arms_b = b.extra if isinstance(b.extra, dict) else {}
    out = []
    for key in sorted(set(arms_a) & set(arms_b)):
        judge, stat, scope = key.split("|")
        row = calibrated_row(
            a, b, statistic=f"{stat} ({judge})", scope=scope, arm_a=arms_a[key],
            arm_b=arms_b[key], kind=kind, digits=2 if kind == "ordinal" else 3,
        )  # fmt: skip
        if row is not None:
            out.append(row)
    return out
