"""``driftlens judges triage``: the judge-human and judge-judge disagreements of a study
pushed to a real Label Studio as a project of their own, largest first, and a second push
adds nothing.

The study's own annotations are stored in the database as a pull writes them (the triage
reads the calibration table, not the server); the triage project is real.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from annotation.client import LabelStudioClient
from annotation.selection import parse_selection
from annotation.tasks import build_tasks
from storage.models import JudgeScore, Response
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.seed import seed
from tests.judge_robustness.test_calibration_hooks import _study, _task

pytestmark = pytest.mark.labelstudio


def _seed_scored(plan: list[tuple[dict[str, int], list[str]]]) -> list[Any]:
    """Run "demo"'s helpfulness tasks, each response's judge scores and raters' votes."""
    with open_workspace_session(resolve_settings()) as s:
        seed(s)
        tasks = build_tasks("helpfulness", parse_selection(["run=demo"]), session=s)
        assert len(tasks) == 4
        ids = sorted(r.id for r in s.exec(select(Response)) if r.id is not None)
        study_id = _study(s, "helpfulness")
        for t, r, (scores, votes) in zip(tasks, ids, plan, strict=False):
            _task(s, study_id, t.key, t.data, [{"score": v} for v in votes])
            for judge, value in scores.items():
                score = JudgeScore(response_id=r, judge_model=judge, kind="helpfulness")
                score.value = value
                s.add(score)
        s.commit()
    return tasks


def test_triage_pushes_the_disagreements_largest_first_once(
    run_cli: Any, ls_client: LabelStudioClient
) -> None:
    # judge score and the three raters' votes of the four responses of run "demo":
    # gap 0, gap 3, no majority, gap 1
    plan = [(2, ["2", "2", "1"]), (4, ["1", "1", "0"]), (3, ["4", "2", "0"]), (3, ["2", "2", "2"])]
    tasks = _seed_scored([({"sim/judge-lenient": j}, votes) for j, votes in plan])
    res = run_cli("judges", "triage", "helpfulness", "--json")
    assert res.code == 0, res.err
    got = res.json()
    assert (got["compared"], got["disagreeing"], got["imported"]) == (3, 2, 2)
    assert got["project_created"] and got["judge"] == "sim/judge-lenient"
    assert (got["judge_compared"], got["judge_disagreeing"]) == (0, 0)
    in_ls = sorted(ls_client.list_tasks(got["project_id"]), key=lambda t: t.id)
    # the gap of 3 first; each task is the one the raters saw, with its text
    assert [t.data["external_key"] for t in in_ls] == [tasks[1].key, tasks[3].key]
    assert in_ls[0].data["response"] == tasks[1].data["response"]
    assert in_ls[0].data["question"] == tasks[1].data["question"]
    again = run_cli("judges", "triage", "helpfulness", "--json")
    assert again.code == 0, again.err
    assert (again.json()["imported"], again.json()["already_present"]) == (0, 2)
    assert again.json()["project_id"] == got["project_id"]
    assert len(ls_client.list_tasks(got["project_id"])) == 2
    # the triage study is pushed by triage only, said in one sentence
    bad = run_cli("annotate", "push", "helpfulness_triage", "--select", "run=demo")
    assert bad.code != 0 and "driftlens judges triage helpfulness" in bad.err
    assert "Traceback" not in bad.err


def test_triage_queues_judge_judge_disagreements_with_both_verdicts_as_text(
    run_cli: Any, ls_client: LabelStudioClient
) -> None:
    # judge A, judge B (markup in its name), the raters' votes: A agrees with the humans but
    # B is 2 off; no majority but A and B 4 apart; A 1 off the humans, B agrees with A
    other = "sim/strict-<b>2</b>"  # after sim/judge-lenient by name
    plan = [(2, 0, ["2", "2", "1"]), (4, 0, ["4", "2", "0"]), (3, 3, ["2", "2", "2"])]
    tasks = _seed_scored([({"sim/judge-lenient": a, other: b}, votes) for a, b, votes in plan])
    res = run_cli("judges", "triage", "helpfulness", "--json")
    assert res.code == 0, res.err
    got = res.json()
    assert (got["compared"], got["disagreeing"]) == (2, 1)
    assert (got["judge_compared"], got["judge_disagreeing"], got["imported"]) == (3, 2, 3)
    in_ls = sorted(ls_client.list_tasks(got["project_id"]), key=lambda t: t.id)
    # gap 4 (judges, no majority), gap 2 (judges), gap 1 (judge-human)
    assert [t.data["external_key"] for t in in_ls] == [tasks[1].key, tasks[0].key, tasks[2].key]
    assert in_ls[0].data["triage_note"] == f"sim/judge-lenient 4 vs {other} 0 (gap 4)"
    assert in_ls[2].data["triage_note"] == ("sim/judge-lenient 3 vs annotators' majority 2 (gap 1)")
    assert in_ls[1].data["response"] == tasks[0].data["response"]
    # the project shows the note through a plain Text tag: markup stays text
    config = ls_client.get_project(got["project_id"]).label_config
    assert '<Text name="triage_note" value="$triage_note"/>' in config
    assert "HyperText" not in config
