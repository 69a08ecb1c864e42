"""End to end through the CLI: import → generate (simulator) → label → analyze → stats.

The simulator injects known doses (noise 0, attributes moderate, life events strong), so
the report must show the tiers in order with noise not significant, and ``driftlens stats``
on the exported drift table must reproduce ``stats.json``. A question and every answer
carry XSS probes that must come out as inert text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import select

from storage.models import Response
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.cli_invoke import invoke_cli

SCRIPT_PROBE = "<script>alert(1)</script>"
IMG_PROBE = "<img src=x onerror=alert(1)>"
SAMPLE_QUESTIONS = Path(__file__).resolve().parents[2] / "study" / "data" / "sample_questions.jsonl"
PERTURBATIONS = "noise,age,occupation,gender,bereavement,divorce,job_loss"
B, SEED = 2000, 4


def _cli(*args: str) -> str:
    res = invoke_cli(list(args))
    assert res.exit_code == 0, (args, res.output, res.exception)
    return res.output


@pytest.mark.slow
def test_simulated_run_end_to_end(workspace: Path, tmp_path: Path) -> None:
    lines = SAMPLE_QUESTIONS.read_text(encoding="utf-8").splitlines()[:11]
    lines.append(
        json.dumps(
            {
                "id": "xss-1",
                "text": f"{SCRIPT_PROBE} Should a person move abroad for work or stay near family?",
                "domains": ["career"],
            }
        )
    )
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _cli("questions", "import", str(questions))
    _cli("generate", "--model", "sim/default", "--run", "e2e", "--samples", "2",
         "--perturbations", PERTURBATIONS)  # fmt: skip
    # A model's answer with markup in it: every answer carries the image probe.
    with open_workspace_session(resolve_settings()) as session:
        for r in session.exec(select(Response)).all():
            r.answer = f"{r.answer or ''} {IMG_PROBE}"
            session.add(r)
    _cli("label", "--run", "e2e", "--labeler", "keywords")
    out = tmp_path / "report"
    printed = _cli("analyze", "--run", "e2e", "--labeler", "keywords", "--out", str(out),
                   "--bootstrap", str(B), "--seed", str(SEED))  # fmt: skip
    assert "SIMULATED DATA" in printed

    # the tiers come out in order and noise is not significant
    tiers = pd.read_csv(out / "tables" / "tiers.csv")
    for metric, g in tiers.groupby("metric"):
        level = dict(zip(g["class"], g["mean_drift"], strict=True))
        assert level["noise"] < level["attribute"] < level["life_event"], metric
    conditions = pd.read_csv(out / "tables" / "conditions.csv")
    noise = conditions[conditions["class"] == "noise"]
    assert len(noise) == 2 * 3 and (noise["p_adjusted"] > 0.05).all()
    life = conditions[conditions["class"] == "life_event"]
    assert (life["p_adjusted"] < 0.05).all() and (life["d_rel"] > 0).all()

    # the report's numbers are `driftlens stats` on the exported drift table
    again = tmp_path / "again.json"
    _cli("stats", str(out / "drift.csv"), "--json", str(again),
         "--bootstrap", str(B), "--seed", str(SEED))  # fmt: skip
    assert json.loads(again.read_text()) == json.loads((out / "stats.json").read_text())

    # untrusted text is inert in both report formats
    page = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "<script" not in page.lower() and SCRIPT_PROBE not in md
    assert IMG_PROBE not in page and IMG_PROBE not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;script&gt;alert\\(1\\)&lt;/script&gt;" in md
