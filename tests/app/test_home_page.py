"""Home agrees with Benchmark on the question count and links to the next pages
(issue 37, item 15), through ``AppTest``."""

from __future__ import annotations

from storage.models import Question
from storage.repo.questions import INSTRUMENT_SOURCE_PREFIX
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.questions import import_sample_questions
from tests.app.apptest_support import open_page


def _metric(at: object, label: str) -> str:
    return next(str(m.value) for m in at.metric if m.label == label)  # type: ignore[attr-defined]


def test_home_counts_the_questions_the_benchmark_lists() -> None:
    with open_workspace_session(resolve_settings()) as session:
        added = len(import_sample_questions(session=session).added)
        # requests an instrument stores as question rows are not benchmark questions
        for i in range(7):
            session.add(Question(external_id=f"bank-{i}", text=f"memory line {i}",
                                 source=f"{INSTRUMENT_SOURCE_PREFIX}conflicts"))  # fmt: skip
    assert added > 0
    home, bench = open_page("home.py"), open_page("benchmark.py")
    assert _metric(home, "Questions") == _metric(bench, "Questions") == str(added)


def test_home_next_step_links_the_instruments_jobs_and_compare() -> None:
    from app.instruments import instrument_pages

    at = open_page("home.py")
    labels = {str(link.proto.label) for link in at.get("page_link")}
    # the Instruments section's pages (an instrument's page placed in another section is
    # reached from there)
    wanted = {p.title for p in instrument_pages() if p.section is None} | {"Compare", "Jobs"}
    assert {"Memory conflicts", "Source reliance"} <= wanted
    assert wanted <= labels, labels
