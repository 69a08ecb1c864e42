"""The no-memory baseline: the same requests with an empty bank, judged by the same rubric,
read beside the run with memory in the report (D3–D5; D1/D2 do not apply)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session
from typer.testing import Result

from study.conflicts.analysis import stored_table
from study.conflicts.report import build_report


def test_no_memory_run_is_the_rubric_baseline(
    cli: Callable[..., Result], session: Session, tmp_path: Path
) -> None:
    assert cli("conflicts", "import", "--sample").exit_code == 0
    for run, extra in (("mem", ()), ("empty", ("--track", "no-memory"))):
        made = cli("conflicts", "generate", "--model", "sim/mc-balanced", "--run", run, *extra)
        assert made.exit_code == 0, made.output
        judged = cli("conflicts", "judge", "--run", run, "--judge", "sim/judge-lenient")
        assert judged.exit_code == 0, judged.output
    empty = stored_table(["empty"], session=session)
    assert empty["d1"].isna().all() and empty["d2"].isna().all()  # nothing to perceive
    assert empty[["d3", "d4", "d5"]].notna().all().all()
    assert set(empty["observability"]) == {"None"} and set(empty["track"]) == {"no-memory"}

    without = build_report(["mem"], session=session, out_dir=tmp_path / "a", bootstrap=200)
    assert without.baseline == ()
    page = (tmp_path / "a" / "conflicts_report.html").read_text()
    assert "Not assessed: no no-memory run" in page

    rep = build_report(
        ["mem"], baseline_runs=["empty"], session=session, out_dir=tmp_path / "b", bootstrap=200
    )
    mem = stored_table(["mem"], session=session)
    for row in rep.baseline:
        dims = {"D3-D5 sum": ["d3", "d4", "d5"], "abstention rate": ["abstain"]}.get(
            row["measure"], [row["measure"][:2].lower()]
        )
        # a plain recomputation: per instance, the mean over its judged answers (a sum is
        # len(dims) x the mean of the dimensions that apply: pandas' mean skips NaN)
        a = (mem[dims].mean(axis=1) * len(dims)).groupby(mem["instance_id"]).mean()
        b = (empty[dims].mean(axis=1) * len(dims)).groupby(empty["instance_id"]).mean()
        both = (a - b).dropna()
        assert row["with_memory"] == pytest.approx(a[both.index].mean())
        assert row["no_memory"] == pytest.approx(b[both.index].mean())
        assert row["difference"] == pytest.approx(both.mean())
        assert row["ci_low"] <= row["difference"] <= row["ci_high"]
        assert row["n_instances"] == len(both) >= 38
    assert [r["measure"] for r in rep.baseline][-2:] == ["D3-D5 sum", "abstention rate"]
    html = re.sub(r"\s+", " ", (tmp_path / "b" / "conflicts_report.html").read_text())
    assert "No-memory baseline (the same requests with an empty bank" in html
