"""A loop SIGKILLed mid-round, mid-rewrite, mid-gate and mid-decision resumes to the same end.

The same command is run again after each kill (what a job's *Resume* does); the finished
loop must equal an uninterrupted loop with the same options, with no duplicated round,
proposal or version.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from sqlmodel import Session, func, select

from storage.models import LabelingRound, OntologyVersion, RewriteProposal
from storage.refinement_models import RefinementDecision, RefinementRound

LABELERS = "sim:definitions;seed=1,sim:definitions;seed=2,sim:definitions;seed=3"
REPO = Path(__file__).resolve().parents[2]


def _args(ws: Path, out: Path) -> list[str]:
    return [
        "--workspace", str(ws), "ontology", "refine", "--run", "demo",
        "--ontology-version", "original", "--labelers", LABELERS,
        "--rewriter", "sim/rewriter-operational", "--sample", "30", "--max-rounds", "4",
        "--patience", "4", "--json", str(out),
    ]  # fmt: skip


def _run(ws: Path, out: Path, *kill: str) -> int:
    env = {
        k: v for k, v in os.environ.items() if k not in ("DRIFTLENS_WORKSPACE", "DRIFTLENS_DB_URL")
    }
    command = (
        [sys.executable, "-m", "tests.ontology.refine_killer", *kill, *_args(ws, out)]
        if kill
        else [sys.executable, "-m", "app.cli", *_args(ws, out)]
    )
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, timeout=600)
    if not kill:
        assert done.returncode == 0, done.stderr.decode()
    return done.returncode


def _counts(ws: Path) -> dict[str, int]:
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings(workspace=ws)) as session:
        assert isinstance(session, Session)
        return {
            t.__name__: session.exec(select(func.count()).select_from(t)).one()
            for t in (
                LabelingRound,
                RewriteProposal,
                OntologyVersion,
                RefinementRound,
                RefinementDecision,
            )
        }


def _comparable(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: data[k] for k in ("rounds", "decisions", "stop_reason", "final_version")}


def test_sigkill_anywhere_then_resume_equals_an_uninterrupted_loop(
    sim_run: str, workspace: Path, tmp_path: Path
) -> None:
    clean = tmp_path / "clean"
    shutil.copytree(workspace, clean)
    _run(clean, tmp_path / "clean.json")

    killed_out = tmp_path / "killed.json"
    for point, nth in (("round", "2"), ("rewrite", "2"), ("gate", "3"), ("decide", "1")):
        assert _run(workspace, killed_out, point, nth) == -signal.SIGKILL, point
    _run(workspace, killed_out)

    assert _comparable(killed_out) == _comparable(tmp_path / "clean.json")
    counts = _counts(workspace)
    assert counts == _counts(clean)
    data = json.loads(killed_out.read_text(encoding="utf-8"))
    accepted = sum(1 for d in data["decisions"] if d["decision"] == "accepted")
    assert counts["OntologyVersion"] == 2 + accepted  # the two seeds + one per accept
    assert counts["LabelingRound"] == len(data["rounds"])
    assert counts["RewriteProposal"] == sum(1 for d in data["decisions"] if d["proposal"])
