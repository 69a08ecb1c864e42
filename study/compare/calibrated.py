"""``B − A`` calibrated to both runs' human slices, for any instrument's ``driftlens compare``.

An adapter that can read a pulled human slice puts, in its :class:`RunData`'s ``extra``,
one :class:`driftlens_core.ppi.PPIArm` per ``"JUDGE|STATISTIC|SCOPE"`` (the judge or
classifier, the statistic's name, its scope); :func:`calibrated_rows` pairs the two runs'
arms of the same key (clustered by the arms' own cluster labels: a question, instance or
stem shared by both runs is one cluster) into a PPI++ difference beside the model-only
rows. Rows with fewer than :data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` humans in either
run are left out: the model-only rows stay the headline there.
"""

from __future__ import annotations

import math
from typing import Any

from scipy import stats as sps

from study.compare.types import Kind, RunData, StatRow


def calibrated_rows(a: RunData, b: RunData, *, kind: Kind = "ordinal") -> list[StatRow]:
    """``B − A`` of each statistic both runs have a human slice for (PPI++, paired on instance).

    The test is the PPI++ z test of the difference (``p_boot`` holds its p so the row
    takes part in the family's BH adjustment); rows with fewer than
    :data:`~driftlens_core.ppi.MIN_HUMAN_LABELS` humans in either run are left out: the
    model-only rows stay the comparison's headline there.
    """
    from driftlens_core.ppi import MIN_HUMAN_LABELS, ppi_difference, ppi_mean

    arms_a = a.extra if isinstance(a.extra, dict) else {}
    arms_b = b.extra if isinstance(b.extra, dict) else {}
    out = []
    for key in sorted(set(arms_a) & set(arms_b)):
        judge, stat, scope = key.split("|")
        ea, eb = ppi_mean(**_kw(arms_a[key])), ppi_mean(**_kw(arms_b[key]))
        if min(ea.n_human, eb.n_human) < MIN_HUMAN_LABELS:
            continue
        d = ppi_difference(arms_b[key], arms_a[key])
        z = d.estimate / d.se if d.se > 0 else math.nan
        p = float(2 * sps.norm.sf(abs(z))) if math.isfinite(z) else math.nan
        out.append(
            StatRow(
                run_a=a.name,
                run_b=b.name,
                statistic=f"{stat} ({judge})",
                scope=scope,
                kind=kind,
                value_a=ea.estimate,
                value_b=eb.estimate,
                diff=d.estimate,
                ci_low=d.ci[0],
                ci_high=d.ci[1],
                se=d.se,
                p_boot=p,
                test="PPI++ z",
                p_test=p,
                test_detail=(
                    f"{ea.n_human} + {eb.n_human} human labels, lambda {d.lam:.2f}; "
                    f"model-only B - A {d.model_only:.2f}"
                ),
                mdd=math.nan,
                margin=math.nan,
                tost_p=math.nan,
                n_items=d.n_clusters,
            )
        )
    return out


def _kw(arm: Any) -> dict[str, Any]:
    return {"model": arm.model, "human": arm.human, "inclusion": arm.inclusion,
            "cluster": arm.cluster}  # fmt: skip
