"""The memory-conflicts report keeps hostile text inert and replaces its folder in one rename."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from study.conflicts.analysis import TABLE_COLUMNS, analyze_scores, validate_scores
from study.conflicts.items import import_bank_file
from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
from study.conflicts.report import build_report
from study.conflicts.report.document import ConflictReport, render_html, render_markdown
from study.conflicts.score import judge_conflict_run
from tests.hostile_text import HOSTILE, assert_inert_html, assert_inert_markdown


def test_hostile_model_and_judge_names_stay_inert() -> None:
    rows = [
        {
            "model": f"m{HOSTILE}",
            "judge": judge,
            "instance_id": f"i{i}",
            "type": "CPC",
            "distractors": "6",
            "d1": "3",
            "d2": "2",
            "d3": "2",
            "d4": str(i % 2),
            "d5": "4",
            "d6": "",
        }
        for i in range(6)
        for judge in ("j1", f"j{HOSTILE}")
    ]
    df = validate_scores(pd.DataFrame(rows, columns=list(TABLE_COLUMNS)).astype(str))
    rep = ConflictReport(
        stats=analyze_scores(df, bootstrap=50, seed=0),
        curve=(),
        lowest_dimension={(f"m{HOSTILE}", "j1"): "d4"},
        observability=(),
        track_gap=(),
    )
    assert_inert_markdown(render_markdown(rep))
    assert_inert_html(render_html(rep, None))


def test_a_failed_report_leaves_the_previous_one_whole(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_bank_file(None, session=session)
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-balanced"), run="c1", doses=(0, 6), samples=1
    )
    generate_conflicts(opts, session=session)
    judge_conflict_run("c1", ModelSpec.parse("sim/judge-strict"), session=session)
    out = tmp_path / "rep"
    build_report(["c1"], session=session, out_dir=out, bootstrap=100)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert Path("conflicts_report.html") in before and Path("conflict_scores.csv") in before

    def dies(report: ConflictReport) -> str:
        raise RuntimeError("killed while writing")

    import study.conflicts.report.build as module

    monkeypatch.setattr(module, "render_markdown", dies)
    with pytest.raises(RuntimeError):
        build_report(["c1"], session=session, out_dir=out, bootstrap=200)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir()] == ["rep"], "no staged sibling is left"
