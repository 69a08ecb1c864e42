"""A parse failure is never a verdict (issue 36 item 6), disposition.

The classifier (the mock: the simulator with a quarter of the cases answered in prose)
whose reply does not parse after one repair leaves the response unscored: stored as such,
counted per arm and shown in the report ("N of M unscored"), and out of the aligned rate.
"""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, select

from llm.specs import ModelSpec
from storage.disposition_models import DispositionScore
from storage.repo.disposition import require_arms
from study.disposition.analysis import analyze_study, stored_rate_table
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.report import write_disposition_report
from study.disposition.runs import ArmSpec, add_arms, run_study
from study.disposition.score import classify_arms
from tests.garbled_backend import MockGarbledBackend

JUDGE = "openai-api/mock/garbled"


def _small() -> BatteryDocument:
    doc = load_sample_batteries()
    return BatteryDocument(
        batteries=[doc.batteries[0].model_copy(update={"stems": doc.batteries[0].stems[:3]})]
    )


def test_unparseable_mock_categories_are_stored_counted_shown_and_left_out(
    session: Session, tmp_path: Path
) -> None:
    arms = [
        ArmSpec(
            "ref", ModelSpec.parse("sim/disp-qwen-d000"), role="reference", dose=0, max_tokens=400
        ),
        ArmSpec("d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100, max_tokens=400),
    ]
    add_arms("un", arms, session=session)
    doc = _small()
    run_study("un", doc, session=session, judge=ModelSpec.parse("sim/default"), repeat_share=0.0)
    backend = MockGarbledBackend("default", every=4, spec=JUDGE)
    rows = require_arms("un", session=session)
    summary = classify_arms(rows, doc, judge=backend, session=session, repeat_share=0.0)
    bad = summary.errors  # identical cases share a request: count the responses
    assert len(backend.garbled) >= 2 and bad >= len(backend.garbled)  # the dose
    stored = session.exec(
        select(DispositionScore).where(DispositionScore.judge_model == JUDGE)
    ).all()
    unscored = [s for s in stored if s.parse_status == "error"]
    assert len(unscored) == bad and all(s.value is None and s.label is None for s in unscored)

    analysis = analyze_study("un", session=session, n_boot=100, seed=0)  # reads the mock's
    assert sum(a.unscored for a in analysis.arms.values()) == bad  # counted
    assert sum(a.classified for a in analysis.arms.values()) == summary.scored + bad
    table, _ = stored_rate_table(rows, session=session, judge_model=JUDGE)
    assert int((table["aligned"] != "").sum()) == summary.scored  # left out of the rate
    for g in analysis.groups:  # the analysed rates read the same table: NaN is no answer
        assert int(g.table["aligned"].notna().sum()) <= summary.scored
    files = write_disposition_report(analysis, tmp_path / "r")
    md = files["report_md"].read_text(encoding="utf-8")
    for a in analysis.arms.values():  # shown
        assert f"{a.name} {a.unscored} of {a.classified} unscored" in md
    assert "Roles in run un:ref: classifier sim/default" in md
