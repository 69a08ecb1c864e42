"""The Benchmark page runs the LLM filter with progress and offers the benchmark export."""

from __future__ import annotations

from storage.models import Question
from storage.repo.questions import list_questions, set_tiers
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.questions import import_sample_questions
from tests.app.apptest_support import open_page

LOOKUP = "What is the capital of Australia? <script>alert(1)</script>"


def _seed() -> None:
    with open_workspace_session(resolve_settings()) as session:
        import_sample_questions(session=session)
        session.add(Question(external_id="lookup-1", text=LOOKUP))


def test_run_the_filter_stores_verdicts_and_rejected_questions_stay_listed() -> None:
    _seed()
    at = open_page("benchmark.py")
    assert at.text_input[0].value == "sim/default"
    next(b for b in at.button if b.label == "Run the filter").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Filtered 49 question(s) with sim/default" in at.success[0].value
    frame = at.dataframe[0].value
    row = frame[frame["id"] == "lookup-1"].iloc[0]
    assert row["filter"] == "REJECT"
    assert row["reason"]
    assert row["question"] == LOOKUP  # untrusted text shown as a literal cell
    with open_workspace_session(resolve_settings()) as session:
        stored = {q.external_id: q for q in list_questions(session=session)}
    assert stored["lookup-1"].filter_label == "REJECT"
    assert all(q.filter_model == "sim/default" for q in stored.values())
    # Every question either has a verdict or a recorded error, never both.
    assert all((q.filter_label is None) == (q.filter_error is not None) for q in stored.values())


def test_export_offers_a_zip_with_the_three_files() -> None:
    _seed()
    with open_workspace_session(resolve_settings()) as session:
        ids = [q.id for q in list_questions(session=session)[:2] if q.id is not None]
        set_tiers({ids[0]: "core", ids[1]: "relaxed"}, session=session)
    at = open_page("benchmark.py")
    at.selectbox[0].set_value("relaxed").run()
    next(b for b in at.button if b.label == "Prepare the export").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "2 question(s) ready" in at.success[0].value
    buttons = at.get("download_button")
    assert len(buttons) == 1
    assert buttons[0].proto.label.startswith("Download benchmark")


def test_export_without_tiers_explains_what_is_missing() -> None:
    _seed()
    at = open_page("benchmark.py")
    next(b for b in at.button if b.label == "Prepare the export").click().run()
    assert not at.exception
    assert "no core questions yet" in at.error[0].value
