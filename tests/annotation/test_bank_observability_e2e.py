"""The bank-observability study against a real Label Studio: two annotators, judge vs humans."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.client import LabelStudioClient
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.conflicts.observability import observability_banks, stored_observability
from tests.annotation.conftest import annotate_each, make_users

pytestmark = pytest.mark.labelstudio


def test_observability_study_humans_extractor_and_llm_judge(
    run_cli: Any, ls_client: LabelStudioClient
) -> None:
    assert run_cli("conflicts", "import", "--sample").code == 0
    res = run_cli(
        "conflicts", "generate", "--model", "sim/mc-balanced", "--run", "obs",
        "--distractors", "0", "--track", "pipeline",
    )  # fmt: skip
    assert res.code == 0, res.err
    res = run_cli("conflicts", "observe", "--run", "obs", "--judge", "sim/judge-strict")
    assert res.code == 0, res.err
    res = run_cli(
        "annotate", "push", "bank_observability", "--select", "run=obs", "--select", "limit=4",
        "--json",
    )  # fmt: skip
    assert res.code == 0, res.err
    pushed = res.json()
    assert pushed["imported"] == 4
    tasks = sorted(ls_client.list_tasks(pushed["project_id"]), key=lambda t: t.id)
    assert all("[side_a" in t.data["reference"] for t in tasks)
    truth = [t.data["extractor_label"] for t in tasks]
    other = {"FULL": "None", "PARTIAL": "FULL", "None": "PARTIAL"}
    # annotator 1 gives the extractor's label everywhere; annotator 2 differs on task 0
    ann1 = truth
    ann2 = [other[truth[0]], *truth[1:]]
    users = make_users(ls_client, n=2)
    annotate_each(ls_client, users, tasks, "observability", [ann1, ann2], "extracted")
    res = run_cli("annotate", "apply", "bank_observability", "--json")
    assert res.code == 0, res.err
    rows = {(r["rater_a"], r["rater_b"]): r for r in res.json()["observability_agreement"]}
    humans = rows[("annotator 1", "annotator 2")]
    assert humans["n"] == 4 and humans["exact"] == pytest.approx(0.75)
    vs_extractor = rows[("humans", "extractor")]
    assert vs_extractor["n"] == 3 and vs_extractor["exact"] == 1.0  # task 0 has no agreed label

    res = run_cli("conflicts", "observability", "--run", "obs", "--json")
    assert res.code == 0, res.err
    rep = res.json()
    assert sum(k for k, _lo, _hi in rep["shares"]["humans"].values()) == 3
    pairs = {(a["rater_a"], a["rater_b"]): a for a in rep["agreement"]}
    judge_vs_humans = pairs[("sim/judge-strict", "humans")]
    assert judge_vs_humans["n"] == 3
    # by hand: the judge's stored labels against the three agreed human labels
    with open_workspace_session(resolve_settings()) as s:
        judged = stored_observability(observability_banks("obs", session=s), session=s)
    hits = [
        judged[t.data["instance_id"]]["sim/judge-strict"] == t.data["extractor_label"]
        for t in tasks[1:]
    ]
    assert judge_vs_humans["exact"] == pytest.approx(sum(hits) / 3)
    judge_vs_extractor = pairs[("extractor", "sim/judge-strict")]
    assert judge_vs_extractor["n"] == 42
    res = run_cli("conflicts", "observability", "--run", "obs")
    assert res.code == 0 and "humans" in res.out
