"""A memory-conflicts study as the browser runs it: upload, ``conflicts study``, read-back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from storage.errors import InputError
from storage.repo.conflicts import list_conflict_banks
from study.conflicts.items import sample_banks_path
from study.conflicts.setup import (
    ConflictStudy,
    answers_frame,
    import_banks_upload,
    policy_run_name,
    read_report,
    report_folder,
    run_simulated,
    study_argv,
)


def test_a_bad_upload_names_the_file_and_line_and_stores_nothing(session: Session) -> None:
    lines = sample_banks_path().read_text(encoding="utf-8").splitlines()[:3]
    bad = json.loads(lines[2])
    del bad["core_memories"]
    data = "\n".join([*lines[:2], json.dumps(bad)]).encode()
    with pytest.raises(InputError, match=r"^mine\.jsonl line 3: "):
        import_banks_upload("mine.jsonl", data, session=session)
    assert list_conflict_banks(session=session) == []
    with pytest.raises(InputError, match=r"^mine\.csv: bank files are JSONL"):
        import_banks_upload("mine.csv", data, session=session)
    with pytest.raises(InputError, match="at least one judge"):
        study_argv(
            ConflictStudy(run="r", model=ModelSpec.parse("sim/mc-balanced"), judges=()),
            out=Path("x"),
        )


def test_the_page_command_runs_a_study_the_read_back_shows(
    workspace: Path, session: Session, cli: Callable[..., object]
) -> None:
    lines = sample_banks_path().read_text(encoding="utf-8").splitlines()[:4]
    res = import_banks_upload("four.jsonl", "\n".join(lines).encode(), session=session)
    session.commit()
    assert res.inserted == 4
    study = ConflictStudy(
        run="tiny/1",
        model=ModelSpec.parse("sim/mc-balanced"),
        judges=(ModelSpec.parse("sim/judge-lenient"), ModelSpec.parse("sim/judge-strict")),
        doses=(0, 6),
        policies=("recency",),
        bootstrap=200,
    )
    out = report_folder(workspace, "tiny/1")
    assert report_folder(workspace, policy_run_name("tiny/1", "recency")) == out
    result = cli(*study_argv(study, out=out))
    assert result.exit_code == 0, (result.output, result.exception)  # type: ignore[attr-defined]

    report = read_report(out)
    assert report is not None and report.stats is not None and report.figure is not None
    titles = [t for t, _, _ in report.tables]
    # the headline (read against the no-memory baseline) first, then the score table
    assert titles[0].startswith("Headline") and titles[1].startswith("Rubric scores")
    assert any("judge-strict" in str(v) for v in report.tables[1][1].to_numpy().ravel())
    stats = json.loads(report.stats.read_text())
    assert {r["judge"] for r in stats["scores"]} == {"sim/judge-lenient", "sim/judge-strict"}

    session.expire_all()
    answers = answers_frame(["tiny/1"], session=session)
    # 4 banks x 2 doses, each scored by both judges (a reply still unreadable after its
    # repair is left out: the simulated judges break the format 3% of the time)
    assert answers["response_id"].nunique() == 8 and 14 <= len(answers) <= 16
    assert answers["answer"].str.len().gt(0).all()
    assert run_simulated("tiny/1", session=session)
    policy = answers_frame([policy_run_name("tiny/1", "recency")], session=session)
    assert policy["response_id"].nunique() == 8


def test_a_study_with_the_no_memory_baseline_reads_its_scores_against_it(
    workspace: Path, session: Session, cli: Callable[..., object]
) -> None:
    from study.conflicts.setup import baseline_run_name

    lines = sample_banks_path().read_text(encoding="utf-8").splitlines()[:4]
    import_banks_upload("four.jsonl", "\n".join(lines).encode(), session=session)
    session.commit()
    study = ConflictStudy(
        run="base",
        model=ModelSpec.parse("sim/mc-balanced"),
        judges=(ModelSpec.parse("sim/judge-lenient"),),
        doses=(0, 6),
        bootstrap=200,
        baseline=True,
    )
    argv = study_argv(study, out=report_folder(workspace, "base"))
    assert "--baseline" in argv
    result = cli(*argv)
    assert result.exit_code == 0, (result.output, result.exception)  # type: ignore[attr-defined]
    session.expire_all()
    empty = answers_frame([baseline_run_name("base")], session=session)
    assert empty["response_id"].nunique() == 4  # one answer per bank, dose 0, no memory
    assert report_folder(workspace, baseline_run_name("base")) == report_folder(workspace, "base")
    report = read_report(report_folder(workspace, "base"))
    assert report is not None
    table = next(t for title, t, _ in report.tables if title.startswith("No-memory baseline"))
    assert set(table["judge"]) == {"sim/judge-lenient"}
    assert table["no memory"].ne("–").any(), table  # the no-memory column holds numbers


def test_the_page_form_offers_the_no_memory_baseline() -> None:
    from tests.app.apptest_support import open_page

    at = open_page("conflicts.py")
    box = next((c for c in at.checkbox if c.label.startswith("No-memory baseline")), None)
    assert box is not None, [c.label for c in at.checkbox]
    assert box.value is True  # on by default: a rubric score is read against it
