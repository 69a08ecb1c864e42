"""Judge settings are stored with every verdict, shown in the report, and never mixed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlmodel import Session, select

from llm.specs import ModelSpec
from storage.errors import InputError
from storage.models import JudgeScore
from study.conflicts.items import import_bank_file
from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
from study.conflicts.report import build_report
from study.conflicts.score import JUDGE_PROMPT_VERSION, judge_conflict_run


def test_settings_recorded_shown_and_mixing_refused(session: Session, tmp_path: Path) -> None:
    import_bank_file(None, session=session)
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-balanced"), run="s1", doses=(6,), samples=1
    )
    generate_conflicts(opts, session=session)
    judge_conflict_run("s1", ModelSpec.parse("sim/judge-lenient"), session=session)
    rows = list(session.exec(select(JudgeScore)))
    assert rows and all(r.settings is not None for r in rows)
    settings = rows[0].settings
    assert settings is not None
    assert settings["model"] == "sim/judge-lenient"
    assert settings["prompt_version"] == JUDGE_PROMPT_VERSION
    assert (settings["temperature"], settings["seed"]) == (0.0, 0)
    assert len(settings["prompt_hash"]) == 16
    assert len({str(r.settings) for r in rows}) == 1

    build_report(["s1"], session=session, out_dir=tmp_path / "r", bootstrap=200)
    html = re.sub(r"\s+", " ", (tmp_path / "r" / "conflicts_report.html").read_text())
    assert "Judge settings (provenance)" in html and "temperature 0.0" in html

    # half of the verdicts re-given at another temperature: never pooled
    for r in rows[: len(rows) // 2]:
        r.settings = {**settings, "temperature": 0.7}
        session.add(r)
    session.commit()
    with pytest.raises(InputError, match=r"sim/judge-lenient .* mix judge settings"):
        build_report(["s1"], session=session, out_dir=tmp_path / "r2", bootstrap=200)
