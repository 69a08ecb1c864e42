"""The README's first command: the demo runs offline and leaves a consistent report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPORT = Path("reports") / "demo"


def test_demo_prints_simulated_results_and_where_to_go_next(
    demo_workspace: tuple[Path, str],
) -> None:
    ws, out = demo_workspace
    assert "SIMULATED DATA" in out
    assert "open the report" in out and "open the workbench" in out
    assert (
        "memory conflicts" in out
        and (ws / "reports" / "conflicts" / "conflicts_report.html").exists()
    )
    assert (ws / REPORT / "report.html").exists() and (ws / REPORT / "report.md").exists()
    assert "Ontology round 1" in out and "Efficiency and resource optimization" in out


def test_demo_report_matches_driftlens_stats_on_the_exported_table(
    demo_workspace: tuple[Path, str], tmp_path: Path
) -> None:
    ws, _ = demo_workspace
    stored = json.loads((ws / REPORT / "stats.json").read_text())
    config = json.loads((ws / REPORT / "provenance.json").read_text())
    bootstrap, seed = config["analysis"]["bootstrap"], config["analysis"]["seed"]
    assert bootstrap == 2000
    again = tmp_path / "stats.json"
    subprocess.run(
        [
            str(Path(sys.executable).with_name("driftlens")),
            "stats",
            str(ws / REPORT / "drift.csv"),
            "--bootstrap",
            str(bootstrap),
            "--seed",
            str(seed),
            "--json",
            str(again),
        ],
        check=True,
        capture_output=True,
    )
    assert json.loads(again.read_text()) == stored


def test_demo_tiers_are_ordered_and_noise_is_not_significant(
    demo_workspace: tuple[Path, str],
) -> None:
    ws, _ = demo_workspace
    stats = json.loads((ws / REPORT / "stats.json").read_text())
    (model,) = stats["models"].values()
    for metric, result in model["metrics"].items():
        by_class: dict[str, list[float]] = {}
        for cond in result["conditions"].values():
            by_class.setdefault(cond["class"], []).append(cond["mean"])
            if cond["class"] == "noise":
                assert cond["p_adjusted"] > 0.05, (metric, cond)
        means = {k: sum(v) / len(v) for k, v in by_class.items()}
        assert means["noise"] < means["attribute"] < means["life_event"], (metric, means)
    drift = pd.read_csv(ws / REPORT / "drift.csv")
    assert set(drift["condition_class"]) == {"none", "noise", "attribute", "life_event"}


def test_rerunning_the_demo_resumes_without_duplicates(demo_workspace: tuple[Path, str]) -> None:
    ws, _ = demo_workspace
    import os

    env = dict(os.environ, DRIFTLENS_WORKSPACE=str(ws))
    done = subprocess.run(
        # Same B as the session fixture, so the report other tests read stays the same.
        [str(Path(sys.executable).with_name("driftlens")), "demo", "--bootstrap", "2000"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "0 generated now" in done.stdout and "Questions added: 0" in done.stdout
    assert "Ontology round" not in done.stdout  # the studio round is not repeated
