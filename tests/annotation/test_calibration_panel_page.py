"""The judge-human calibration panel on the Human studies page (``AppTest``): the statistics
of a pulled helpfulness study against sklearn, "Not assessed" with the reason, *Push
triage* disabled without a server and, against the real Label Studio, run as a job."""

from __future__ import annotations

from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from annotation.client import LabelStudioClient
from annotation.selection import parse_selection
from annotation.tasks import build_tasks
from storage.models import JudgeScore
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.app.apptest_support import open_page, unescape
from tests.judge_robustness.test_calibration_hooks import _task, demo_helpfulness
from tests.study.jobs_support import wait_for_jobs

# judge score and three raters' votes of run "demo"'s four responses (the last: no majority)
PLAN = [(4, ["4", "4", "3"]), (1, ["2", "2", "1"]), (0, ["0", "0", "0"]), (3, ["4", "3", "2"])]
JUDGE = "sim/judge-<i>a</i>"


def seed_judged_helpfulness(session: Session, plan: list[tuple[int, list[str]]] = PLAN) -> None:
    """Run "demo"'s helpfulness study: the tasks the raters saw, votes and JUDGE's scores."""
    study_id, responses = demo_helpfulness(session)
    # the tasks the raters saw (a triage push sends them again)
    tasks = build_tasks("helpfulness", parse_selection([]), session=session)
    data = {t.key: t.data for t in tasks}
    for (rid, key), (judge, votes) in zip(responses, plan, strict=True):
        score = JudgeScore(response_id=rid, judge_model=JUDGE, kind="helpfulness")
        score.value = judge
        session.add(score)
        _task(session, study_id, key, data[key], [{"score": v} for v in votes])


def _seed() -> None:
    with open_workspace_session(resolve_settings()) as s:
        seed_judged_helpfulness(s)
        s.commit()


def _button(at: AppTest, key: str) -> Any:
    return next(b for b in at.button if b.key == key)


def test_the_panel_shows_kappa_rates_and_the_confusion_matrix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    _seed()
    at = open_page("human_studies.py")
    assert any(h.value == "Judge–human calibration" for h in at.subheader)
    metrics = {m.label: m.value for m in at.metric}
    human, judge = ["4", "2", "0"], ["4", "1", "0"]
    levels = ["0", "1", "2", "3", "4"]
    assert metrics["Cohen's kappa"] == f"{cohen_kappa_score(human, judge, labels=levels):.3f}"
    weighted = cohen_kappa_score(human, judge, labels=levels, weights="quadratic")
    assert metrics["Weighted kappa"] == f"{weighted:.3f}"
    assert metrics["Judge bias (judge − human)"] == f"{(0 - 1 + 0) / 3:+.3f}"
    # the judge's name is shown as text, never as markup
    line = next(t.value for t in at.text if t.value.startswith("Judge "))
    assert JUDGE in line and "on 3 items of helpfulness (1 without a majority" in line
    frames = [f.value for f in at.dataframe]
    confusion = next(f for f in frames if "judge 1" in f.columns)
    assert confusion.loc["human 2", "judge 1"] == 1 and int(confusion.to_numpy().sum()) == 3
    classes = next(f for f in frames if "TPR" in f.columns).set_index("class")
    assert classes.loc["2", "TPR"] == 0.0 and classes.loc["4", "TPR"] == 1.0
    push = _button(at, "hs-calibration-push-triage")
    assert push.disabled and "Label Studio is not running" in push.help


def test_a_study_without_both_labels_is_not_assessed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    with open_workspace_session(resolve_settings()) as s:
        demo_helpfulness(s)
        s.commit()
    at = open_page("human_studies.py")
    assert any(
        unescape(i.value).startswith("Not assessed: Study 'helpfulness' has no item")
        for i in at.info
    )
    assert not at.metric or "Cohen's kappa" not in {m.label for m in at.metric}


@pytest.mark.labelstudio
def test_push_triage_runs_as_a_job(ls_client: LabelStudioClient) -> None:
    _seed()
    at = open_page("human_studies.py")
    _button(at, "hs-calibration-push-triage").click().run()
    assert not at.exception, [e.value for e in at.exception]
    jobs = wait_for_jobs(resolve_settings(), timeout=120)
    job = jobs[0]
    assert (job.kind, job.state, list(job.argv[-3:])) == (
        "judges triage",
        "done",
        ["judges", "triage", "helpfulness"],
    ), job.error
    assert job.result is not None and job.result["imported"] == 1  # the one disagreement
    tasks = ls_client.list_tasks(int(job.result["project_id"]))
    assert len(tasks) == 1 and JUDGE in tasks[0].data["triage_note"]
    at.run()
    assert any("imported 1 of 1 tasks" in s.value for s in at.success)
