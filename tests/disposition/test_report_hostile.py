"""The disposition report keeps hostile text inert and replaces its folder in one rename."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session
from typer.testing import Result

from llm.specs import ModelSpec
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.runs import ArmSpec, add_arms, run_study
from tests.hostile_text import (
    HOSTILE,
    assert_inert_html,
    assert_inert_markdown,
    assert_no_control_in,
)


def _study(session: Session, study: str) -> None:
    doc = load_sample_batteries()
    small = BatteryDocument(
        batteries=[doc.batteries[0].model_copy(update={"stems": doc.batteries[0].stems[:3]})]
    )
    add_arms(
        study,
        [
            ArmSpec(
                "ref",
                ModelSpec.parse("sim/disp-qwen-d000"),
                role="reference",
                dose=0,
                reasoning="off",
            ),
            ArmSpec(
                HOSTILE,
                ModelSpec.parse("sim/disp-qwen-d100"),
                dose=100,
                reasoning="off",
                server_instance=HOSTILE,
            ),
        ],
        session=session,
    )
    run_study(study, small, session=session, judge=ModelSpec.parse("sim/default"), repeat_share=0.0)
    session.commit()


def test_hostile_arm_and_study_names_stay_inert(
    session: Session, cli: Callable[..., Result], tmp_path: Path
) -> None:
    study = f"s{HOSTILE}"
    _study(session, study)
    out = tmp_path / "rep"
    res = cli("disposition", "analyze", "--study", study, "--out", str(out), "-B", "200")
    assert res.exit_code == 0, res.output
    assert_inert_markdown((out / "disposition.md").read_text(encoding="utf-8"))
    assert_inert_html((out / "disposition.html").read_text(encoding="utf-8"))
    assert_no_control_in((out / "figures").glob("*.svg"))


def test_a_failed_analyze_leaves_the_previous_report_whole(
    session: Session,
    cli: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _study(session, "k")
    out = tmp_path / "rep"
    res = cli("disposition", "analyze", "--study", "k", "--out", str(out), "-B", "200")
    assert res.exit_code == 0, res.output
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert Path("disposition.html") in before and Path("rates_off.csv") in before

    def dies_half_way(analysis: object, out_dir: Path, **_: object) -> dict[str, Path]:
        (out_dir / "disposition.md").write_text("partial")
        raise RuntimeError("killed while writing")

    import study.disposition.report as report

    monkeypatch.setattr(report, "write_disposition_report", dies_half_way)
    res = cli("disposition", "analyze", "--study", "k", "--out", str(out), "-B", "300")
    assert res.exit_code != 0
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir()] == ["rep"], "no staged sibling is left"
