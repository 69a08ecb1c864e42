"""The Human studies page through ``AppTest``: offline agreement and apply, and push/pull
against the real Label Studio."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotation.client import LabelStudioConnection
from storage.models import Question
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.seed import seed
from tests.annotation.test_apply import PASS, Seeder
from tests.app.apptest_support import open_page


def _button(at: AppTest, key: str) -> Any:
    return next(b for b in at.button if b.key == key)


def test_without_a_server_the_page_explains_and_disables_server_actions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    at = open_page("human_studies.py")
    assert any("No Label Studio server configured" in i.value for i in at.info)
    assert _button(at, "push_button").disabled
    assert _button(at, "pull_button").disabled


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
