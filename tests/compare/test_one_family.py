"""Issue 37 item 8: ranking letters and the table read one BH family."""

from __future__ import annotations

import math
from itertools import combinations

from study.compare.service import _ranking
from study.compare.types import StatRow

RUNS = ("r1", "r2", "r3")


def _row(
    a: str, b: str, p_boot: float, p_adjusted: float, value_a: float, value_b: float
) -> StatRow:
    return StatRow(
        run_a=a, run_b=b, statistic="rate", scope="all", kind="binary", value_a=value_a,
        value_b=value_b, diff=value_b - value_a, ci_low=math.nan, ci_high=math.nan,
        se=math.nan, p_boot=p_boot, test="t", p_test=p_boot, test_detail="", mdd=math.nan,
        margin=math.nan, tost_p=math.nan, n_items=40, p_adjusted=p_adjusted,
    )  # fmt: skip


def test_letters_separate_exactly_the_pairs_the_table_calls_different() -> None:
    # Within this statistic alone BH would separate every pair (0.01, 0.02, 0.03 -> 0.03);
    # over the whole table (other statistics' rows in the family) r1-r3 and r2-r3 are not.
    values = {"r1": 0.2, "r2": 0.5, "r3": 0.8}
    p = {("r1", "r2"): (0.01, 0.04), ("r1", "r3"): (0.02, 0.06), ("r2", "r3"): (0.03, 0.07)}
    rows = [_row(a, b, *p[(a, b)], values[a], values[b]) for a, b in combinations(RUNS, 2)]
    letters = {r.run: set(r.letters) for r in _ranking(RUNS, rows, 0.05)}
    for row in rows:
        share = bool(letters[row.run_a] & letters[row.run_b])
        assert share == (row.p_adjusted >= 0.05), (row.run_a, row.run_b, letters)
