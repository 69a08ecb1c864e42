"""The Human studies page through ``AppTest``: offline agreement and apply, and push/pull
against the real Label Studio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotation import server
from annotation.client import LabelStudioConnection
from annotation.offline import tasks_json
from annotation.selection import parse_selection
from storage.models import Question
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.seed import seed
from tests.annotation.test_apply import PASS, Seeder
from tests.app.apptest_support import open_page, unescape


def _button(at: AppTest, key: str) -> Any:
    return next(b for b in at.button if b.key == key)


def _no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)


def test_without_a_server_every_disabled_button_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_server(monkeypatch)
    at = open_page("human_studies.py")
    reason = "Label Studio is not running in this workspace: press Start Label Studio."
    assert any(reason in unescape(w.value) for w in at.warning)
    for key in ("push_button", "progress_button", "pull_button"):
        button = _button(at, key)
        assert button.disabled and button.help == reason, key
    # the reason is on the page next to each of them, not only in a tooltip
    assert sum(c.value == f"Unavailable: {reason}" for c in at.caption) == 3
    assert not _button(at, "start_ls_button").disabled


def test_start_label_studio_button_uses_the_server_lifecycle_mocked_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mocked: starting a real Label Studio takes about a minute, more than a page test may;
    the real start is ``annotation.server.start``, tested with the CLI's lifecycle."""
    _no_server(monkeypatch)
    calls: list[Path] = []

    def fake_start(workspace: Path, **_: Any) -> server.ServerState:
        calls.append(workspace)
        return server.ServerState(
            url="http://127.0.0.1:1",
            port=1,
            pid=1,
            data_dir="d",
            log_file="l",
            admin_email="a",
            admin_password="p",
            token="t",
        )

    monkeypatch.setattr(server, "start", fake_start)
    at = open_page("human_studies.py")
    _button(at, "start_ls_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls == [resolve_settings().workspace]
    assert any("Label Studio started at http://127.0.0.1:1" in s.value for s in at.success)


def test_selection_preview_and_offline_task_export(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_server(monkeypatch)
    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    at = open_page("human_studies.py")
    at.selectbox(key="push_study").set_value("question_checks")
    at.text_area(key="push_selection").input("limit=3").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(
        t.value == "This selection makes 3 question_checks tasks (4 match; the limit keeps 3)."
        for t in at.text
    )
    labels = [getattr(b, "label", "") for b in at.get("download_button")]
    assert "Download tasks (.json)" in labels and "Labeling config (.xml)" in labels
    # the file the button serves: Label Studio's import format, one object per task
    with open_workspace_session(resolve_settings()) as s:
        payload = json.loads(tasks_json("question_checks", parse_selection(["limit=3"]), session=s))
    assert len(payload) == 3
    assert all(t["data"]["external_key"].startswith("question:") for t in payload)

    at.text_area(key="push_selection").input("colour=blue").run()
    assert any("Invalid selection colour" in unescape(e.value) for e in at.error)
    off = _button(at, "tasks_download_off")
    assert off.disabled and "Invalid selection colour" in off.help


def test_agreement_and_apply_from_pulled_annotations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    with open_workspace_session(resolve_settings()) as s:
        s.add(Question(external_id="q0", text="**Bold** <script>alert(1)</script>?"))
        s.flush()
        seeder = Seeder(s, "question_checks")
        seeder.task(
            "question:q0",
            {"question_id": "q0", "question": "**Bold** <script>alert(1)</script>?"},
            [(1, PASS, 30), (2, PASS, 30), (3, PASS, 30)],
        )
    at = open_page("human_studies.py")
    assert [m.value for m in at.metric][:2] == ["1", "3"]
    _button(at, "apply_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "1 core" in at.success[0].value
    with open_workspace_session(resolve_settings()) as s:
        assert s.exec(select(Question)).one().tier == "core"
    rendered = " ".join(m.value for m in at.markdown)
    assert "<script>" not in rendered


@pytest.mark.labelstudio
def test_push_and_pull_through_the_page(ls_connection: LabelStudioConnection) -> None:
    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    at = open_page("human_studies.py")
    at.selectbox(key="push_study").set_value("question_checks")
    at.text_area(key="push_selection").input("limit=3")
    _button(at, "push_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert "imported 3 of 3" in at.success[0].value
    _button(at, "progress_button").click().run()
    assert not at.error, [e.value for e in at.error]
    _button(at, "pull_button").click().run()
    assert not at.error, [e.value for e in at.error]
    assert "Pulled 1 studies" in at.success[0].value
