"""The disposition demo inside ``driftlens demo``, its report, the app page, and escaping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from study.disposition.analysis import analyze_study
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.report import write_disposition_report
from study.disposition.runs import ArmSpec, add_arms, run_study
from tests.app.apptest_support import open_page

SCRIPT = "<script>alert(1)</script>"


def test_main_demo_runs_the_disposition_demo_and_the_page_shows_it(
    demo_workspace: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, out = demo_workspace
    assert "disposition drift" in out
    report = ws / "reports" / "disposition-demo"
    html = (report / "disposition.html").read_text()
    assert "SIMULATED DATA" in html and "Null test" in html and "Dose curve" in html
    assert (report / "figures" / "dose_curve.svg").stat().st_size > 1000
    stats = json.loads((report / "stats_on.json").read_text())
    si = stats["batteries"]["self_interest"]["arms"]
    # the known doses show: reasoning on, 100% clearly below the reference
    assert si["on-d100"]["ci_high"] < 0
    off = json.loads((report / "stats_off.json").read_text())["batteries"]["self_interest"]
    assert off["arms"]["off-d100"]["drift_pp"] < si["on-d100"]["drift_pp"]
    monkeypatch.setenv("DRIFTLENS_WORKSPACE", str(ws))
    at = open_page("disposition.py")
    assert any("SIMULATED" in w.value for w in at.warning)
    assert len(at.dataframe) >= 3


def test_report_escapes_untrusted_arm_names(session: Session, tmp_path: Path) -> None:
    doc = load_sample_batteries()
    small = BatteryDocument(
        batteries=[doc.batteries[0].model_copy(update={"stems": doc.batteries[0].stems[:3]})]
    )
    add_arms(
        "x",
        [
            ArmSpec(
                "ref",
                ModelSpec.parse("sim/disp-qwen-d000"),
                role="reference",
                dose=0,
                reasoning="off",
            ),
            ArmSpec(SCRIPT, ModelSpec.parse("sim/disp-qwen-d100"), dose=100, reasoning="off"),
        ],
        session=session,
    )
    run_study("x", small, session=session, judge=ModelSpec.parse("sim/default"), repeat_share=0.0)
    files = write_disposition_report(analyze_study("x", session=session, n_boot=100), tmp_path)
    html = files["report_html"].read_text()
    assert SCRIPT not in html and "&lt;script&gt;" in html
    assert SCRIPT not in files["report_md"].read_text()
