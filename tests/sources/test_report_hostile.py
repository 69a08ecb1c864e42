"""The source-reliance report keeps hostile text inert and replaces its folder in one rename."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm.specs import ModelSpec
from study.sources.analysis import analyze_sources_table
from study.sources.items import shipped_items
from study.sources.plan import run_sources
from study.sources.report import write_sources_report
from study.sources.sim.wiring import backend_for
from tests.cli_invoke import invoke_cli
from tests.hostile_text import (
    HOSTILE,
    assert_inert_html,
    assert_inert_markdown,
    assert_no_control_in,
)


def test_hostile_model_and_dataset_names_stay_inert(tmp_path: Path) -> None:
    items = shipped_items()[::10]
    run = run_sources(items, backend_for(ModelSpec.parse("sim/src-paper"), items))
    table = run.table().assign(model=f"m{HOSTILE}", dataset=f"d{HOSTILE}")
    result = analyze_sources_table(table, bootstrap=100, seed=1).to_dict()
    files = write_sources_report(
        result, table, tmp_path, title=f"t{HOSTILE}", notes=(f"n{HOSTILE}",)
    )
    assert_inert_markdown(files.markdown.read_text(encoding="utf-8"))
    assert_inert_html(files.html.read_text(encoding="utf-8"))
    assert_no_control_in(tmp_path.glob("*.svg"))


def _run(out: Path, bootstrap: str) -> int:
    args = ["sources", "run", "--model", "sim/src-rigid", "--limit", "6", "--out", str(out)]
    return invoke_cli([*args, "--bootstrap", bootstrap]).exit_code


def test_a_failed_run_leaves_the_previous_report_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r"
    assert _run(out, "200") == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert Path("report.html") in before and Path("probes.csv") in before

    def dies_half_way(result: object, table: object, out_dir: Path, **_: object) -> None:
        (out_dir / "report.md").write_text("partial")
        raise OSError("disk full")

    import study.sources.report as report

    monkeypatch.setattr(report, "write_sources_report", dies_half_way)
    assert _run(out, "300") != 0
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir()] == ["r"], "no staged sibling is left"
