"""Every table the disposition report writes reads back, even when it has no rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
from sqlmodel import Session
from typer.testing import Result

from llm.specs import ModelSpec
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.runs import ArmSpec, add_arms, run_study


def test_a_one_arm_study_writes_every_table_with_its_header(
    session: Session, cli: Callable[..., Result], tmp_path: Path
) -> None:
    doc = load_sample_batteries()
    small = BatteryDocument(
        batteries=[doc.batteries[0].model_copy(update={"stems": doc.batteries[0].stems[:3]})]
    )
    ref = ArmSpec(
        "ref", ModelSpec.parse("sim/disp-qwen-d000"), role="reference", dose=0, reasoning="off"
    )
    add_arms("one", [ref], session=session)
    run_study("one", small, session=session, judge=ModelSpec.parse("sim/default"), repeat_share=0)
    session.commit()
    out = tmp_path / "rep"
    res = cli("disposition", "analyze", "--study", "one", "--out", str(out), "-B", "200")
    assert res.exit_code == 0, res.output
    tables = sorted(out.glob("table_*.csv"))
    assert tables, sorted(p.name for p in out.iterdir())
    for path in tables:
        frame = pd.read_csv(path)  # a bare newline raises EmptyDataError here
        assert len(frame.columns) >= 2, path.name
    null = pd.read_csv(out / "table_null_test.csv")
    assert null.empty and list(null.columns[:3]) == ["group", "battery", "arm"]
    drift = pd.read_csv(out / "table_drift.csv")
    assert drift.empty and "drift_pp" in drift.columns
