"""``driftlens label`` labels every step once, resumes, and feeds the drift table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sqlmodel import col, delete, func, select
from typer.testing import CliRunner

from app.cli.root import build_app
from llm.specs import ModelSpec
from storage.models import Response, StepLabel
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.questions import QuestionRow, store_questions
from study.reasoning.drift import build_drift_table
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.trajectories import label_run, load_trajectories

QUESTIONS = [
    "Should a small team rewrite a working legacy system or keep patching it?",
    "Is it better to rent or to buy a home when prices are high?",
    "How should someone weigh a higher salary against a longer commute?",
]


def _seed_run() -> None:
    with open_workspace_session(resolve_settings()) as session:
        rows = [QuestionRow(f"q{i}", text, (), i + 1) for i, text in enumerate(QUESTIONS)]
        store_questions(rows, session=session, source="test")
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run="r", perturbations="age,filler", samples=2
            ),
            session=session,
        )


def test_label_run_labels_every_step_once_and_resumes() -> None:
    _seed_run()
    with open_workspace_session(resolve_settings()) as session:
        responses = session.exec(select(Response)).all()
        total_steps = sum(len(r.steps) for r in responses)
        first = label_run("r", "keywords", session=session)
        assert first.labeled_now == sum(1 for r in responses if r.steps)
        assert first.steps_labeled == total_steps
        assert session.exec(select(func.count()).select_from(StepLabel)).one() == total_steps
        again = label_run("r", "keywords", session=session)
        assert again.labeled_now == 0 and again.already_labeled == first.labeled_now
        # Losing one response's labels relabels exactly that response.
        victim = next(r for r in responses if r.steps)
        session.exec(delete(StepLabel).where(col(StepLabel.response_id) == victim.id))
        session.commit()
        third = label_run("r", "keywords", session=session)
        assert third.labeled_now == 1 and third.steps_labeled == len(victim.steps)
        trajectories = load_trajectories("r", "keywords", session=session)
    assert len(trajectories) == len(responses)
    table = build_drift_table(trajectories)
    # 3 questions x (1 extra baseline sample + 2 samples x (6 age + 3 filler stimuli)).
    assert table.n_pairs + sum(table.skipped.values()) == 3 * (1 + 2 * 9)


def test_label_cli_prints_json_summary_and_rejects_unknown_labeler() -> None:
    _seed_run()
    runner = CliRunner()
    ok = runner.invoke(build_app(), ["label", "--run", "r", "--json"])
    assert ok.exit_code == 0, ok.output
    summary = json.loads(ok.output[ok.output.index("{") :])
    assert summary["labeler"] == "keywords" and summary["steps_labeled"] > 0
    # Through the real console script: one clear sentence, no traceback.
    bad = subprocess.run(
        [str(Path(sys.executable).with_name("driftlens")), "label", "--run", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert "no run named 'nope'" in bad.stderr and "Traceback" not in bad.stderr
