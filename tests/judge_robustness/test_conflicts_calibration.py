"""The conflicts report's "Judge–human calibration (rubric)" section: "Not assessed" before a
rubric study exists, then the rubric judge's D1-D5 scores against the annotators' agreed
scores (stored as a pull writes them), with sklearn's kappa as the oracle."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from sklearn.metrics import cohen_kappa_score
from sqlmodel import Session, select
from typer.testing import Result

from annotation.selection import parse_selection
from annotation.tasks import build_tasks, response_ids_by_key
from storage.models import JudgeScore
from tests.judge_robustness.cli_steps import judged_conflicts_run
from tests.judge_robustness.test_calibration_hooks import _study, _task


def test_conflicts_report_shows_the_rubric_judge_against_the_humans(
    cli: Callable[..., Result], session: Session, tmp_path: Path
) -> None:
    judged_conflicts_run(cli, "cal")
    before = tmp_path / "before"
    assert cli("conflicts", "report", "--run", "cal", "--out", str(before)).exit_code == 0
    html = re.sub(r"\s+", " ", (before / "conflicts_report.html").read_text())
    assert "Judge–human calibration (rubric)" in html
    assert "Not assessed: no human check of the rubric judge" in html

    tasks = build_tasks("conflict_rubric", parse_selection(["run=cal"]), session=session)[:6]
    ids = response_ids_by_key(["cal"], session=session)
    scores = {
        (s.response_id, s.kind): int(s.value)
        for s in session.exec(
            select(JudgeScore).where(JudgeScore.judge_model == "sim/judge-lenient")
        )
        if s.value is not None
    }
    study_id = _study(session, "conflict_rubric")
    judge: list[str] = []
    human: list[str] = []
    for i, t in enumerate(tasks):
        a: dict[str, str] = {}
        b: dict[str, str] = {}
        for d in ("d1", "d2", "d3", "d4", "d5"):
            j = scores.get((ids[t.key], f"conflict_{d}"))
            if j is None:
                continue  # a dimension the judge left out (no observable conflict)
            # d3 of every other answer one point off the judge; d4 split (no majority)
            h = (j + 1) % 5 if d == "d3" and i % 2 else j
            a[d], b[d] = str(h), str(h if d != "d4" else (h + 1) % 5)
            if d != "d4":
                judge.append(str(j))
                human.append(str(h))
        _task(session, study_id, t.key, t.data, [a, b])
    session.commit()
    after = tmp_path / "after"
    assert cli("conflicts", "report", "--run", "cal", "--out", str(after)).exit_code == 0
    html = re.sub(r"\s+", " ", (after / "conflicts_report.html").read_text())
    assert "Not assessed: no human check" not in html
    kappa = cohen_kappa_score(human, judge, labels=["0", "1", "2", "3", "4"])
    assert f"{len(judge)} items; Cohen&#x27;s kappa {kappa:.3f}" in html, html[-3000:]
    assert "The rubric judge (sim/judge-lenient)" in html
