"""A parse failure is never a verdict (issue 36 item 6), memory conflicts.

A judge (the mock: the simulator's strict judge with a quarter of the cases answered in
prose) whose reply does not parse after one repair leaves the answer unscored: stored as
such, counted and shown in the report ("N of M unscored"), and left out of every estimate.
"""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, select

from llm.specs import ModelSpec
from storage.models import JudgeScore
from study.conflicts.analysis import stored_table
from study.conflicts.items import import_bank_file
from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
from study.conflicts.report import build_report
from study.conflicts.score import judge_conflict_run
from tests.garbled_backend import MockGarbledBackend

JUDGE = "openai-api/mock/garbled"


def test_unparseable_mock_verdicts_are_stored_counted_shown_and_left_out(
    session: Session, tmp_path: Path
) -> None:
    import_bank_file(None, session=session)
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-balanced"), run="u1", doses=(0, 6), samples=1
    )
    generate_conflicts(opts, session=session)
    backend = MockGarbledBackend("judge-strict", every=5, spec=JUDGE)
    summary = judge_conflict_run("u1", ModelSpec.parse(JUDGE), session=session, backend=backend)
    bad = summary.errors  # identical cases share a request: count the answers
    assert len(backend.garbled) >= 3 and bad >= len(backend.garbled)  # the dose
    asked = summary.requested
    rows = session.exec(
        select(JudgeScore).where(JudgeScore.judge_model == JUDGE, JudgeScore.kind == "conflict_d3")
    ).all()
    unscored = [r for r in rows if r.parse_status == "error"]
    assert len(unscored) == bad and all(r.value is None for r in unscored)  # stored as such

    report = build_report(["u1"], session=session, out_dir=tmp_path / "r", bootstrap=200)
    assert (JUDGE, bad, asked) in report.unscored  # counted
    md = (tmp_path / "r" / "conflicts_report.md").read_text(encoding="utf-8")
    assert f"{bad} of {asked} unscored" in md  # shown
    assert f"Judge {JUDGE}: {bad} of {asked} unscored" in "\n".join(report.notice_lines())
    # left out of every estimate: the analysed table holds only the readable verdicts
    table = stored_table(["u1"], session=session)
    assert (table["judge"] == JUDGE).sum() == asked - bad
