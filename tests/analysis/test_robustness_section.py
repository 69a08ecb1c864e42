"""The reasoning-drift report's "Judge robustness" section: "not assessed" until
``judges robustness --instrument reasoning`` has run, then its flip rates and intervals."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session

from study.judge_robustness.service import judge_robustness
from study.reasoning.analysis import analyze_run
from study.reasoning.trajectories import label_run
from study.report.markdown import md_escape
from tests.analysis._sim_workspace import RUN, build_sim_workspace

ALTERNATIVE = "keywords"


def test_report_says_not_assessed_then_shows_the_relabeling(
    session: Session, tmp_path: Path
) -> None:
    build_sim_workspace(session, n_questions=3)
    label_run(RUN, "sim", session=session)
    analyze_run(RUN, "sim", session=session, out_dir=tmp_path / "before", bootstrap=200)
    md = (tmp_path / "before" / "report.md").read_text("utf-8")
    assert "## Judge robustness" in md and "Not assessed" in md

    got = judge_robustness(
        "reasoning", RUN, session=session, options={"labeler": "sim"}, resamples=2,
        judges=[ALTERNATIVE], sample=30, bootstrap=200,
    )  # fmt: skip
    alt = next(ln for ln in got.lines if ln.kind == "alternative")
    assert got.resample_flip_rate == 0.0  # the perfect labeler reads every seed alike
    assert alt.flip_rate is not None and alt.flip_rate > 0
    analyze_run(RUN, "sim", session=session, out_dir=tmp_path / "after", bootstrap=200)
    md = (tmp_path / "after" / "report.md").read_text("utf-8")
    html = (tmp_path / "after" / "report.html").read_text("utf-8")
    assert "Not assessed" not in md and "<h2>Judge robustness</h2>" in html
    assert md_escape(f"Alternative judge keywords: flip rate {alt.flip_rate:.1%}") in md
    assert md_escape("judge-inclusive") in md and "Conclusion flips under keywords" in md
