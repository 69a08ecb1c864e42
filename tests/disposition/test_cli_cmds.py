"""The disposition CLI around a study: batteries, arms add/list, run, analyze --plan."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from typer.testing import Result

from study.disposition.items import BatteryDocument, load_sample_batteries


def _said(res: Result) -> str:
    """What the user sees: the output, or the one-line error ``main`` prints."""
    return res.output + (str(res.exception) if res.exception is not None else "")


def test_batteries_arms_run_and_analyze_with_a_plan(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    res = cli("disposition", "batteries", "check")
    assert res.exit_code == 0 and "self_interest: 10 stems" in res.output
    doc = load_sample_batteries()
    small = BatteryDocument(
        batteries=[doc.batteries[0].model_copy(update={"stems": doc.batteries[0].stems[:3]})]
    )
    yaml_file = tmp_path / "b.yaml"
    from study.disposition.items import batteries_to_yaml

    yaml_file.write_text(batteries_to_yaml(small))
    csv_file = tmp_path / "b.csv"
    res = cli("disposition", "batteries", "export", str(yaml_file), "--format", "csv",
              "--out", str(csv_file))  # fmt: skip
    assert res.exit_code == 0, res.output
    for name, model, role in (("ref", "sim/disp-qwen-d000", "reference"),
                              ("d100", "sim/disp-qwen-d100", "treatment")):  # fmt: skip
        res = cli("disposition", "arms", "add", name, "--model", model, "--study", "c",
                  "--role", role, "--dose", "0" if role == "reference" else "100",
                  "--reasoning", "off")  # fmt: skip
        assert res.exit_code == 0, res.output
    res = cli("disposition", "arms", "add", "ref", "--model", "sim/disp-qwen-d000", "--study", "c")
    assert res.exit_code != 0 and "already exists" in _said(res)
    res = cli("disposition", "arms", "add", "x", "--model", "sim/x", "--study", "c",
              "--reasoning", "sideways")  # fmt: skip
    assert res.exit_code != 0 and "--reasoning" in _said(res)
    res = cli("disposition", "arms", "list", "--study", "c", "--json")
    assert [a["name"] for a in json.loads(res.output)] == ["ref", "d100"]
    res = cli("disposition", "run", "--study", "c", "--judge", "sim/default",
              "--batteries", str(csv_file))  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "d100: 36 planned" in res.output
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "study: c\nbound_pp: 4\npredictions:\n  - {battery: self_interest, arm: d100, "
        "low: -80, high: 0}\n"
    )
    out = tmp_path / "rep"
    res = cli("disposition", "analyze", "--study", "c", "--out", str(out), "-B", "200",
              "--plan", str(plan))  # fmt: skip
    assert res.exit_code == 0, res.output
    html = (out / "disposition.html").read_text()
    assert "Pre-registration scorecard" in html and "inside" in html
    stats = json.loads((out / "stats_off.json").read_text())
    assert stats["meta"]["bound_pp"] == 4.0
    bad = tmp_path / "bad_plan.yaml"
    bad.write_text("study: c\nbound_pp: -1\n")
    res = cli("disposition", "analyze", "--study", "c", "--out", str(out), "--plan", str(bad))
    assert res.exit_code != 0 and "bad_plan.yaml line 2" in _said(res)
