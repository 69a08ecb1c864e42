"""Calibration through the real Label Studio: a label_check question slice corrects drift.

The end-to-end test of issue 35 (item 6's last sentence): a simulated run labelled by a
confusing simulated LLM labeler, ``annotate push label_check --select unit=question,…`` to
the suite's Label Studio server, two annotators answer every step through its API with the
simulator's true leaf, ``annotate pull``, and ``driftlens analyze`` shows the calibrated
headline beside the model-only one in its output, ``stats.json`` and the report.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from annotation.client import LabelStudioClient, LabelStudioConnection
from llm.specs import ModelSpec
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.conftest import choices, make_users

pytestmark = pytest.mark.labelstudio

RUN = "cal-e2e"
LABELER = "sim:confuse=1~2@0.5+3~4@0.5+5~6@0.5;seed=3"


def _run() -> None:
    from study.questions import QuestionRow, store_questions
    from study.reasoning.generation import GenerationOptions, run_generation
    from study.reasoning.trajectories import label_run

    with open_workspace_session(resolve_settings()) as session:
        rows = [
            QuestionRow(f"e{i:02d}", f"Should a family move to town {i} or stay put?", (), i)
            for i in range(22)
        ]
        store_questions(rows, session=session, source="test")
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"),
                run=RUN,
                perturbations="noise/punctuation/1",
                samples=1,
            ),
            session=session,
        )
        label_run(RUN, LABELER, session=session)
        session.commit()


def test_label_check_question_slice_calibrates_drift_through_label_studio(
    run_cli: Any,
    ls_client: LabelStudioClient,
    ls_connection: LabelStudioConnection,
    tmp_path: Path,
) -> None:
    from study.reasoning.human.simulated import label_check_truth

    _run()
    select = [f"run={RUN}", "unit=question", "limit=20", "seed=1"]
    args = [a for item in select for a in ("--select", item)]
    res = run_cli("annotate", "push", "label_check", *args, "--json")
    assert res.code == 0, res.err
    pushed = res.json()
    tasks = ls_client.list_tasks(pushed["project_id"])
    assert len(tasks) == pushed["imported"] > 20
    assert {t.data["inclusion_probability"] for t in tasks} == {20 / 22}
    assert {t.data["inclusion_unit"] for t in tasks} == {"question"}
    assert len({t.data["question_id"] for t in tasks}) == 20
    users = make_users(ls_client, n=2)
    votes: list[tuple[int, int, dict[str, str]]] = []
    for task in tasks:
        truth = label_check_truth(task.data)
        assert truth, task.data["step"]  # every simulated step has a true leaf
        votes.extend((task.id, user, truth) for user, _ in users)

    def vote(item: tuple[int, int, dict[str, str]]) -> int:
        # one client per call: the annotations go through the API as each annotator's own
        task_id, user, truth = item
        return LabelStudioClient(ls_connection).create_annotation(
            task_id, result=choices(truth, "step"), completed_by=user, lead_time=20.0
        )

    with ThreadPoolExecutor(max_workers=4) as pool:  # hundreds of POSTs: in parallel
        assert len(list(pool.map(vote, votes))) == 2 * len(tasks)
    assert run_cli("annotate", "pull", "label_check", "--json").code == 0
    out = tmp_path / "rep"
    res = run_cli("analyze", "--run", RUN, "--labeler", LABELER, "--out", str(out), "-B", "200")
    assert res.code == 0, res.err
    assert "calibrated to people (label_check, 20 human-labelled questions)" in res.out
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    rows = [r for r in stats["calibrated"]["rows"] if r["metric"] == "dtw"]
    assert rows and all(r["headline"] == "calibrated" for r in rows), rows
    assert all(r["n_human_questions"] == 20 and r["n_questions"] == 22 for r in rows)
    # the confusing labeler inflates drift of noise memories; the humans pull it down
    assert all(r["calibrated"] < r["model_only"] for r in rows), rows
    assert "Calibrated to people" in (out / "report.md").read_text(encoding="utf-8")
