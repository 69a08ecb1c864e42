"""Memory conflicts: a judge with too few readable verdicts is not assessable in the report.

Its distractor effect (a significance and an equivalence bound) and its lowest dimension
are withheld and the report names the share; the other judge's findings stay.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlmodel import Session, select

from llm.specs import ModelSpec
from storage.models import JudgeScore
from study.conflicts.items import import_bank_file
from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
from study.conflicts.report import build_report
from study.conflicts.score import judge_conflict_run


def test_a_judge_below_the_usable_share_is_withheld(session: Session, tmp_path: Path) -> None:
    import_bank_file(None, session=session)
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-balanced"), run="u1", doses=(0, 6), samples=1
    )
    generate_conflicts(opts, session=session)
    for judge in ("sim/judge-lenient", "sim/judge-strict"):
        judge_conflict_run("u1", ModelSpec.parse(judge), session=session)
    rows = session.exec(select(JudgeScore).where(JudgeScore.judge_model == "sim/judge-strict"))
    answers = sorted({r.response_id for r in rows})
    broken = set(answers[: len(answers) * 3 // 10])  # 30% unreadable: below 80% usable
    for sc in session.exec(select(JudgeScore).where(JudgeScore.judge_model == "sim/judge-strict")):
        if sc.response_id in broken:
            sc.parse_status, sc.value = "error", None
            session.add(sc)
    session.commit()

    report = build_report(["u1"], session=session, out_dir=tmp_path / "r", bootstrap=200)
    usable = dict(report.usable)
    assert usable["sim/judge-lenient"].assessable
    assert not usable["sim/judge-strict"].assessable
    assert usable["sim/judge-strict"].usable == len(answers) - len(broken)
    judges = {r.judge for r in report.stats.distractor_effect}
    assert judges == {"sim/judge-lenient"}
    assert {j for _m, j in report.lowest_dimension} == {"sim/judge-lenient"}
    html = re.sub(r"\s+", " ", (tmp_path / "r" / "conflicts_report.html").read_text())
    assert "not assessable: only 59 of 84 answers judged readably (70%)" in html
