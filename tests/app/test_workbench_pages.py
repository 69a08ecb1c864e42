"""Workbench pages perform their primary action through ``AppTest``."""

from __future__ import annotations

import pytest

from tests.app.apptest_support import open_page


def test_benchmark_imports_the_sample_questions_and_lists_them() -> None:
    at = open_page("benchmark.py", timeout=60)
    assert at.metric[0].value == "0"
    next(b for b in at.button if "bundled sample" in b.label).click().run()
    assert not at.exception
    assert int(at.metric[0].value) >= 40
    assert "Added" in at.success[0].value


def test_perturbations_saves_an_edit_as_a_new_version() -> None:
    at = open_page("perturbations.py", timeout=60)
    assert at.selectbox[0].options[-1].endswith(" v1")
    frame = at.dataframe[0].value
    assert set(frame["class"]) == {"noise", "attribute", "life_event"}
    # Saving without edits keeps the version.
    next(b for b in at.button if "new version" in b.label).click().run()
    assert not at.exception
    assert "Nothing changed" in at.info[0].value


def test_settings_shows_whether_keys_are_set_but_never_their_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VLLM_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("VLLM_API_KEY", "sk-very-secret-value")
    at = open_page("settings.py", timeout=60)
    frame = at.dataframe[0].value
    row = frame[frame["service"] == "vllm"].iloc[0]
    assert bool(row["key set"]) is True
    rendered = " ".join(str(v) for v in frame.to_numpy().ravel()) + " ".join(
        t.value for t in at.text
    )
    assert "sk-very-secret-value" not in rendered


def test_settings_redacts_keys_inside_base_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_BASE_URL", "https://user:sk-in-userinfo@acme.test/v1?api_key=sk-q")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.test/v1?token=sk-token&region=eu")
    at = open_page("settings.py", timeout=60)
    frame = at.dataframe[0].value
    shown = " ".join(str(v) for v in frame.to_numpy().ravel())
    for secret in ("sk-in-userinfo", "sk-q", "sk-token"):
        assert secret not in shown
    assert "https://***@acme.test/v1?api_key=***" in shown
    assert "region=eu" in shown
