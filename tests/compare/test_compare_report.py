"""The comparison report: self-contained HTML, inert Markdown, simulated marked, JSON equal."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from study.compare.report import SIMULATED_NOTE, write_comparison_report
from study.compare.types import CompareOptions, Comparison, ItemDiff, Matching, RankRow, StatRow
from tests.hostile_text import (
    HOSTILE,
    assert_inert_html,
    assert_inert_markdown,
    assert_no_control_in,
)


def _row(run_b: str, scope: str, diff: float, verdict: Any) -> StatRow:
    return StatRow(
        run_a="a", run_b=run_b, statistic="aligned rate", scope=scope, kind="binary",
        value_a=0.9, value_b=0.9 + diff, diff=diff, ci_low=diff - 0.05, ci_high=diff + 0.05,
        se=0.02, p_boot=0.01, test="McNemar exact", p_test=0.02, test_detail="3 up, 9 down",
        mdd=0.06, margin=0.05, tost_p=math.nan, n_items=40, p_adjusted=0.02,
        p_test_adjusted=0.03, verdict=verdict,
    )  # fmt: skip


def _comparison() -> Comparison:
    return Comparison(
        instrument="disposition",
        runs=("a", HOSTILE, "c"),
        labels={"a": "sim/x", HOSTILE: HOSTILE, "c": "sim/z"},
        rows=(_row(HOSTILE, HOSTILE, -0.2, "different"), _row("c", "oversight", 0.0, "equivalent")),
        matchings=(Matching("a", HOSTILE, 40, (HOSTILE,), ()),),
        ranking=(RankRow("aligned rate", HOSTILE, HOSTILE, 0.7, "b"),),
        items=(ItemDiff("a", HOSTILE, HOSTILE, 0.5, HOSTILE, HOSTILE + "\nsecond line", "plain"),),
        simulated=True,
        options=CompareOptions(n_boot=1000),
        headline="aligned rate per tendency",
        margin_note="TOST at ±0.05 (the disposition default)",
    )


def test_report_is_self_contained_escaped_and_marked_simulated(tmp_path: Path) -> None:
    files = write_comparison_report(_comparison(), tmp_path / "rep")
    page = files["report_html"].read_text(encoding="utf-8")
    md = files["report_md"].read_text(encoding="utf-8")
    assert SIMULATED_NOTE in page and SIMULATED_NOTE in md
    assert_inert_html(page)
    assert_inert_markdown(md)
    assert_no_control_in([files["report_html"], files["forest_svg"]])
    assert "data:image/svg+xml;base64," in page and "href" not in page
    assert "<script" not in page.lower() and 'src="http' not in page
    data = json.loads(files["json"].read_text(encoding="utf-8"))
    assert data["rows"][1]["tost_p"] is None and data["runs"][1] == HOSTILE
    csv = files["paired_csv"].read_text(encoding="utf-8")
    assert "aligned rate" in csv
    # a second write replaces the folder as a whole
    again = write_comparison_report(_comparison(), tmp_path / "rep")
    assert again["report_html"].exists()


def test_cli_writes_the_report_for_a_disposition_comparison(ws_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "report"
    res = ws_cli("compare", "d025-s1", "d075-s1", "-i", "disposition", "--study", "cmp",
                 "-B", "300", "--out", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    page = (out / "report.html").read_text(encoding="utf-8")
    assert SIMULATED_NOTE in page and "self_interest" in page and "McNemar" in page
    assert json.loads((out / "comparison.json").read_text())["instrument"] == "disposition"
