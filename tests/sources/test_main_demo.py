"""The main ``driftlens demo`` also runs the source-reliance demo and points to its report."""

from __future__ import annotations

import json
from pathlib import Path


def test_main_demo_lists_the_source_reliance_report(demo_workspace: tuple[Path, str]) -> None:
    ws, out = demo_workspace
    folder = ws / "reports" / "sources-demo"
    assert "source reliance" in out
    assert (folder / "report.html").exists() and (folder / "sft_mixed.jsonl").exists()
    stats = json.loads((folder / "stats.json").read_text())
    assert stats["models"]["sim/src-selective"]["commonsense"]["behaviour"]["user"]["type"] == (
        "selective"
    )
