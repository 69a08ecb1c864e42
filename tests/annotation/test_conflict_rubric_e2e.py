"""The memory-conflict rubric study against a real Label Studio: two annotators, agreement."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.client import LabelStudioClient
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.conftest import choices, make_users
from tests.annotation.seed import seed

pytestmark = pytest.mark.labelstudio


def _push_vote_apply(
    run_cli: Any, ls_client: LabelStudioClient, votes: list[dict[str, str]]
) -> tuple[int, dict[str, Any]]:
    """Push the seed's conflict answer, annotators vote ``votes``, apply: (project, JSON)."""
    with open_workspace_session(resolve_settings()) as s:
        seed(s, conflicts=True)
    users = make_users(ls_client, n=len(votes))
    res = run_cli("annotate", "push", "conflict_rubric", "--select", "run=conflicts-seed", "--json")
    assert res.code == 0, res.err
    pushed = res.json()
    assert pushed["imported"] == 1
    task = ls_client.list_tasks(pushed["project_id"])[0]
    for (user, _), v in zip(users, votes, strict=True):
        ls_client.create_annotation(
            task.id, result=choices(v, "response"), completed_by=user, lead_time=30.0
        )
    res = run_cli("annotate", "apply", "conflict_rubric", "--json")
    assert res.code == 0, res.err
    return int(pushed["project_id"]), res.json()


def test_rubric_study_two_annotators_agreement_by_type(
    run_cli: Any, ls_client: LabelStudioClient
) -> None:
    votes = [
        {"d1": "4", "d2": "3", "d3": "2", "d4": "1", "d5": "4", "d6": "safe"},
        {"d1": "4", "d2": "1", "d3": "3", "d4": "1", "d5": "4", "d6": "partial"},
    ]
    project, out = _push_vote_apply(run_cli, ls_client, votes)
    assert ls_client.list_tasks(project)[0].data["risk_note"].startswith("HIGH-RISK")
    rows = {r["type"]: r for r in out["rubric_agreement"]}
    assert set(rows) == {"SCC", "all"}
    # |diffs| = 0, 2, 1, 0, 0 -> exact 3/5, within one 4/5, MAE 3/5
    assert rows["all"]["pairs"] == 5
    assert rows["all"]["exact"] == pytest.approx(0.6)
    assert rows["all"]["within_one"] == pytest.approx(0.8)
    assert rows["all"]["mae"] == pytest.approx(0.6)
    assert rows["all"]["d6_exact"] == 0.0
    assert rows["all"]["d3_applies_exact"] == 1.0
    assert out["action_agreement"] is None  # no action votes on this form's first answers


def test_rubric_study_d3_not_applicable_and_action_class(
    run_cli: Any, ls_client: LabelStudioClient
) -> None:
    """An abstention's D3 marked n/a is no ordinal pair; the action class has its agreement."""
    votes = [
        {"d1": "4", "d2": "3", "d3": "n/a", "d4": "4", "d5": "4", "action": "clarify"},
        {"d1": "3", "d2": "3", "d3": "2", "d4": "4", "d5": "4", "action": "clarify"},
    ]
    project, out = _push_vote_apply(run_cli, ls_client, votes)
    config = ls_client.get_project(project).label_config
    assert 'alias="n/a"' in config and 'name="action"' in config
    row = {r["type"]: r for r in out["rubric_agreement"]}["all"]
    # D3 has an n/a vote: four ordinal pairs (|diffs| 1, 0, 0, 0), applicability disagrees
    assert row["pairs"] == 4
    assert row["exact"] == pytest.approx(0.75)
    assert row["d3_applies_exact"] == 0.0
    assert out["action_agreement"]["n"] == 1
    assert out["action_agreement"]["exact"] == 1.0
    text = run_cli("annotate", "apply", "conflict_rubric")
    assert text.code == 0, text.err
    assert "Action class: 1 answers with two votes, exact 1.000" in text.out
