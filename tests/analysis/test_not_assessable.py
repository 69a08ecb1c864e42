"""Reasoning drift: a run with too few comparable responses is not assessable.

With 40% of the perturbed responses left unlabeled the report says so first, with the
share, and carries no tier, validity verdict, letter, significance or equivalence bound.
"""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, col, delete, select

from storage.models import Response, StepLabel
from study.reasoning.analysis import analyze_run
from tests.analysis._sim_workspace import LABELER, RUN, build_sim_workspace


def test_mostly_unlabeled_run_reports_not_assessable(session: Session, tmp_path: Path) -> None:
    build_sim_workspace(session, n_questions=8)
    perturbed = [
        r.id
        for r in session.exec(select(Response).where(Response.condition != "baseline"))
        if r.id is not None
    ]
    dropped = perturbed[: len(perturbed) * 4 // 10]
    session.exec(delete(StepLabel).where(col(StepLabel.response_id).in_(dropped)))
    session.commit()

    out = tmp_path / "withheld"
    got = analyze_run(RUN, LABELER, session=session, out_dir=out, bootstrap=200)
    assert got.tables.tiers.empty and got.tables.letters.empty and got.tables.validity.empty
    assert got.tables.conditions["p_adjusted"].isna().all()
    assert got.tables.conditions["significant"].isna().all()
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert "not assessable: only" in md.replace("\\", "")
    assert "not assessable: only" in html and "below the 80% needed" in html
