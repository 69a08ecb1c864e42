"""Paired rows from two runs' measurement tables (the generic part of every adapter).

A measurement table has one row per paired unit (``item, unit, statistic, scope, value``):
an answer to one probe and sample, one judge's score of one answer, … The two runs are
paired on ``(item, unit)`` within each statistic and scope. The bootstrap resamples items
(every unit of a drawn item comes along), the statistic of a run is the mean value over
its units (a rate for 0/1 values), and the paired test is exact McNemar on the paired 0/1
units or the Wilcoxon signed-rank test on the items' mean differences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from sqlmodel import Session

from driftlens_core.paired import (
    PairedDifference,
    mcnemar_pairs,
    paired_ratio_difference,
    sign_test,
    wilcoxon_paired,
)
from study.compare.types import CompareOptions, ItemDiff, RunData, StatRow

KEYS = ["statistic", "scope", "item", "unit"]
#: Below this many discordant pairs the McNemar row reports the mid-p (Fagerland, Lydersen
#: & Laake 2013: the exact test's size falls well below α there; bench/compare_calibration.py
#: measured 1.8 % family-wise at 30 items); the exact p is always kept in ``p_exact``.
MIDP_BELOW = 25


def joined(a: RunData, b: RunData, shared: Sequence[str]) -> pd.DataFrame:
    """The units both runs measured on their shared items: ``value_a`` and ``value_b``."""
    keep = set(shared)
    ma = a.measures[a.measures["item"].astype(str).isin(keep)]
    mb = b.measures[b.measures["item"].astype(str).isin(keep)]
    ga = ma.groupby(KEYS, sort=True, observed=True)["value"].mean()
    gb = mb.groupby(KEYS, sort=True, observed=True)["value"].mean()
    both = pd.concat({"value_a": ga, "value_b": gb}, axis=1, join="inner").dropna()
    return both.reset_index()


def unpaired_units(a: RunData, b: RunData, shared: Sequence[str]) -> int:
    """Units of shared items that only one run measured (left out, counted)."""
    keep = set(shared)
    ka = set(map(tuple, a.measures[a.measures["item"].astype(str).isin(keep)][KEYS].values))
    kb = set(map(tuple, b.measures[b.measures["item"].astype(str).isin(keep)][KEYS].values))
    return len(ka ^ kb)


def _f(x: object) -> float:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def stat_row(
    a: RunData,
    b: RunData,
    statistic: str,
    scope: str,
    kind: str,
    res: PairedDifference,
    j: int,
    *,
    test: str,
    p_test: float,
    detail: str,
    p_exact: float = math.nan,
) -> StatRow:
    """One :class:`StatRow` from column ``j`` of a paired bootstrap result."""
    return StatRow(
        run_a=a.name,
        run_b=b.name,
        statistic=statistic,
        scope=scope,
        kind=kind,
        value_a=_f(res.value_a[j]),
        value_b=_f(res.value_b[j]),
        diff=_f(res.diff[j]),
        ci_low=_f(res.ci_low[j]),
        ci_high=_f(res.ci_high[j]),
        se=_f(res.se[j]),
        p_boot=_f(res.p_value[j]),
        test=test,
        p_test=_f(p_test),
        test_detail=detail,
        p_exact=_f(p_exact),
        mdd=_f(res.mdd[j]),
        margin=_f(res.margin[j]),
        tost_p=_f(res.tost_p[j]),
        n_items=int(res.n_clusters[j]),
    )


def paired_rows(
    a: RunData,
    b: RunData,
    shared: Sequence[str],
    *,
    options: CompareOptions,
    margin: float | None,
) -> list[StatRow]:
    """Every statistic and scope of two runs' measurement tables, paired on shared units.

    Args:
        a, b: the two runs (``b − a`` is reported).
        shared: the items both answered.
        options: bootstrap size, seed, α.
        margin: the TOST margin (``None``: each row's own MDD).
    """
    both = joined(a, b, shared)
    rows: list[StatRow] = []
    rng = np.random.default_rng(options.seed)
    for (statistic, scope), g in both.groupby(["statistic", "scope"], sort=False, observed=True):
        kind = a.kinds.get(str(statistic), b.kinds.get(str(statistic), "ordinal"))
        per = g.groupby("item", sort=True, observed=True).agg(
            sa=("value_a", "sum"), sb=("value_b", "sum"), n=("value_a", "size")
        )
        n = per["n"].to_numpy(dtype=float)
        res = paired_ratio_difference(
            per["sa"].to_numpy(dtype=float), n, per["sb"].to_numpy(dtype=float), n,
            n_boot=options.n_boot, seed=rng, alpha=options.alpha,
            margin="mdd" if margin is None else [margin],
        )  # fmt: skip
        p_exact = math.nan
        if kind == "binary":
            m = mcnemar_pairs(g["value_a"].to_numpy(), g["value_b"].to_numpy())
            p_exact = m.p_exact
            # few discordant pairs: the exact test is conservative, its mid-p is not
            small = m.discordant < MIDP_BELOW
            test, p = ("McNemar mid-p", m.p_mid) if small else ("McNemar exact", m.p_exact)
            detail = f"{m.n01} up, {m.n10} down; exact p {m.p_exact:.3g}, mid-p {m.p_mid:.3g}"
        else:
            d = (per["sb"] - per["sa"]).to_numpy() / n
            w = wilcoxon_paired(d)
            s = sign_test(d)
            test, p = "Wilcoxon signed-rank", w.p_value
            detail = f"{w.n_nonzero} items differ; sign test p {s.p_value:.3g}"
        rows.append(
            stat_row(
                a,
                b,
                str(statistic),
                str(scope),
                kind,
                res,
                0,
                test=test,
                p_test=p,
                detail=detail,
                p_exact=p_exact,
            )
        )
        rows[-1] = replace(rows[-1], n_informative=informative_items(g))
    return rows


def informative_items(g: pd.DataFrame) -> int:
    """Items of one statistic and scope whose paired units could tell anything.

    When every unit of both runs holds one and the same value (every answer in
    ``no_stance``, so every aligned value 0), no item is informative: the difference is
    0 on every bootstrap draw whatever the truth. Otherwise every item counts.
    """
    values = pd.concat([g["value_a"], g["value_b"]])
    if values.nunique(dropna=True) <= 1:
        return 0
    return int(g["item"].nunique())


def item_diffs(a: RunData, b: RunData, shared: Sequence[str], *, top: int) -> list[ItemDiff]:
    """The ``top`` items whose units differ most between the runs, with both texts.

    An item's score is the mean absolute difference of its paired units over every
    statistic (for 0/1 outcomes: the share of its answers that changed).
    """
    both = joined(a, b, shared)
    if both.empty or top <= 0:
        return []
    both = both.assign(delta=(both["value_b"] - both["value_a"]).abs())
    score = (
        both.groupby("item", sort=True)["delta"].mean().sort_values(ascending=False, kind="stable")
    )
    out: list[ItemDiff] = []
    for item, s in score.head(top).items():
        part = both[both["item"] == item]
        worst = part.sort_values("delta", ascending=False, kind="stable").iloc[0]
        detail = (
            f"{worst['statistic']} ({worst['scope']}, {worst['unit']}): "
            f"{worst['value_a']:.3g} → {worst['value_b']:.3g}"
        )
        keys = (f"{item}|{worst['scope']}|{worst['unit']}", f"{item}|{worst['unit']}", str(item))
        out.append(
            ItemDiff(
                run_a=a.name,
                run_b=b.name,
                item=str(item),
                score=float(s),
                detail=detail,
                text_a=next((a.texts[k] for k in keys if k in a.texts), ""),
                text_b=next((b.texts[k] for k in keys if k in b.texts), ""),
            )
        )
    return out


class MeasureAdapter:
    """Base of the adapters whose runs are measurement tables (all but reasoning drift).

    A subclass sets ``name``, ``headline``, ``default_margin`` and implements ``load``;
    pairing, items and the unpaired count come from this module.
    """

    name: str = ""
    headline: str = ""
    default_margin: float | None = None

    def labelers(self, *, session: Session) -> list[str] | None:
        """``None``: a measurement table is not compared under a labeler."""
        return None

    def pair(
        self, a: RunData, b: RunData, shared: Sequence[str], *, options: CompareOptions,
        margin: float | None,
    ) -> list[StatRow]:  # fmt: skip
        """:func:`paired_rows`."""
        return paired_rows(a, b, shared, options=options, margin=margin)

    def items(self, a: RunData, b: RunData, shared: Sequence[str], *, top: int) -> list[ItemDiff]:
        """:func:`item_diffs`."""
        return item_diffs(a, b, shared, top=top)

    def unpaired_units(self, a: RunData, b: RunData, shared: Sequence[str]) -> int:
        """:func:`unpaired_units`."""
        return unpaired_units(a, b, shared)
