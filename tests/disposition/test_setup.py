"""Setting up a disposition study as the browser does: upload, arms, the job commands, read-back.

The study runs through the real CLI commands the page submits as jobs (in-process here),
and the page's read-back functions are checked against what those commands stored/wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from storage.errors import InputError
from study.disposition.browse import (
    answers_frame,
    read_report,
    stats_json,
    stem_answers,
    study_stems,
)
from study.disposition.runs import add_arms
from study.disposition.setup import (
    SIM_JUDGE,
    analyze_argv,
    check_batteries_upload,
    dose_arms,
    load_study_batteries,
    parse_doses,
    report_folder,
    run_argv,
    save_batteries,
    sim_arm_model,
    study_batteries,
)
from study.downloads import frame_bytes

TINY = Path(__file__).with_name("tiny_batteries.yaml")


def test_a_bad_upload_names_the_file_and_line_and_stores_nothing(workspace: Path) -> None:
    bad = TINY.read_bytes().replace(b"aligned: true", b"aligned: maybe")
    with pytest.raises(InputError, match=r"^my-batteries\.yaml line 8: .*aligned"):
        save_batteries(workspace, "s", "my-batteries.yaml", bad)
    assert study_batteries(workspace, "s") is None
    with pytest.raises(InputError, match=r"^b\.txt: battery files must be"):
        check_batteries_upload("b.txt", b"x")
    with pytest.raises(InputError, match=r"^b\.csv line 2: the file is not UTF-8"):
        check_batteries_upload("b.csv", b"battery,stem\n\xff\xfe")


def test_doses_and_arms() -> None:
    assert parse_doses("75, 0,100, 75") == [0.0, 75.0, 100.0]
    with pytest.raises(InputError, match=r"0\.\.100"):
        parse_doses("0, 120")
    with pytest.raises(InputError, match="Unknown simulated disposition model"):
        sim_arm_model("sim/nope", 0)
    models = {d: sim_arm_model("sim/disp-qwen", d) for d in (0.0, 75.0)}
    arms = dose_arms(models, reasoning=["on", "budget:64"], samples=2)
    assert [(a.name, a.role, str(a.model)) for a in arms] == [
        ("on-d000", "reference", "sim/disp-qwen-d000"),
        ("on-d075", "treatment", "sim/disp-qwen-d075"),
        ("budget64-d000", "reference", "sim/disp-qwen-d000"),
        ("budget64-d075", "treatment", "sim/disp-qwen-d075"),
    ]


def test_the_page_commands_run_a_study_the_read_back_shows(
    workspace: Path, session: Session, cli: Callable[..., object]
) -> None:
    path = save_batteries(workspace, "st/1", "tiny.yaml", TINY.read_bytes())
    assert study_batteries(workspace, "st/1") == path
    assert len(load_study_batteries(workspace, "st/1").probes()) == 4
    models = {d: sim_arm_model("sim/disp-qwen", d) for d in (0.0, 100.0)}
    add_arms("st/1", dose_arms(models, reasoning=["on"]), session=session)

    out = report_folder(workspace, "st/1")
    assert out.parent == workspace / "reports" / "disposition" and out.name != "st_1"
    result = cli(
        *run_argv(
            "st/1", judge=ModelSpec.parse(SIM_JUDGE), batteries=path, report=out, bootstrap=200
        )
    )
    assert result.exit_code == 0, (result.output, result.exception)  # type: ignore[attr-defined]
    first = (out / "stats_on.json").read_text()
    # analysing again (another B) replaces the report folder as a whole
    result = cli(*analyze_argv("st/1", out=out, bootstrap=300))
    assert result.exit_code == 0, (result.output, result.exception)  # type: ignore[attr-defined]
    assert (out / "stats_on.json").read_text() != first

    session.expire_all()
    assert study_stems("st/1", session=session) == ["self_interest/si-01", "self_interest/si-02"]
    stem = stem_answers("st/1", "self_interest/si-01", session=session)
    # 2 arms x 2 paraphrases x 2 samples, each with the classifier's verdict
    assert len(stem) == 8 and set(stem["arm"]) == {"on-d000", "on-d100"}
    assert stem["verdicts"].str.startswith(f"{SIM_JUDGE}: ").all()
    assert (stem["attempts"] >= 1).all() and (stem["re-asks"] == stem["attempts"] - 1).all()
    with pytest.raises(InputError, match="no answers for stem"):
        stem_answers("st/1", "self_interest/zz", session=session)

    report = read_report(out)
    assert report is not None and report.simulated
    assert {"drift", "null_test", "noise"} <= set(report.tables)
    drift = report.tables["drift"]
    assert set(drift["arm"]) == {"on-d000", "on-d100"}
    assert "dose_curve" in report.figures
    stats = json.loads(stats_json(report))
    assert "stats_on" in stats and stats["stats_on"]["batteries"]["self_interest"]

    answers = answers_frame("st/1", session=session)
    assert len(answers) == 16
    for fmt in ("jsonl", "csv", "parquet"):
        assert frame_bytes(answers, fmt)
    back = pd.read_parquet(__import__("io").BytesIO(frame_bytes(answers, "parquet")))
    assert back["probe"].tolist() == answers["probe"].tolist()
    lines = frame_bytes(answers, "jsonl").decode().splitlines()
    assert len(lines) == 16 and json.loads(lines[0])["study"] == "st/1"
