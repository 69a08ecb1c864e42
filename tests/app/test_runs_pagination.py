"""The Runs page's response table is paginated in SQL (LIMIT/OFFSET), one page at a time."""

from __future__ import annotations

import pytest

from storage.errors import NotFoundError
from storage.models import GenerationRun, ModelSpecRow, Question, Response
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.browse import response_page
from tests.app.apptest_support import open_page

N = 130


def _run_with_responses() -> None:
    with open_workspace_session(resolve_settings()) as session:
        questions = [Question(external_id=f"q-{i}", text=f"Question {i}?") for i in range(2)]
        spec = ModelSpecRow(spec="sim/default", provider="sim", model="default", simulated=True)
        session.add_all([*questions, spec])
        session.flush()
        assert spec.id is not None
        question_ids = [q.id for q in questions if q.id is not None]
        run = GenerationRun(name="paged", model_spec_id=spec.id, prompt_version="steps-v1")
        session.add(run)
        session.flush()
        assert run.id is not None
        for i in range(N):
            session.add(
                Response(
                    run_id=run.id,
                    question_id=question_ids[i % 2],
                    condition=f"filler/{i:03d}",
                    condition_class="noise",
                    text=f"<answer>answer {i}</answer>",
                    steps=[f"step {i}"],
                    answer=f"answer {i}",
                    parse_status="ok",
                )
            )


def test_response_page_is_a_slice_of_the_ordered_run() -> None:
    _run_with_responses()
    with open_workspace_session(resolve_settings()) as session:
        whole = response_page("paged", session=session, limit=10_000)
        assert whole.total == N == len(whole.rows)
        keys = [(r.question_id, r.condition, r.sample) for r in whole.rows]
        assert keys == sorted(keys)
        pages = [response_page("paged", session=session, offset=o, limit=50) for o in (0, 50, 100)]
        assert [len(p.rows) for p in pages] == [50, 50, 30]
        assert sum((p.rows for p in pages), ()) == whole.rows
        assert pages[0].pages == 3 and pages[2].total == N
        assert response_page("paged", session=session, offset=N, limit=5).rows == ()
        with pytest.raises(ValueError):
            response_page("paged", session=session, limit=0)
        with pytest.raises(NotFoundError):
            response_page("nope", session=session)


def test_runs_page_shows_one_page_and_moves_between_pages() -> None:
    _run_with_responses()
    at = open_page("runs.py")
    assert not at.exception, [e.value for e in at.exception]

    def table_rows() -> int:
        frames = [d.value for d in at.dataframe if "question_id" in d.value.columns]
        assert len(frames) == 1
        return len(frames[0])

    assert table_rows() == 50
    assert any("Rows 1–50 of 130" in c.value for c in at.caption)
    page = next(n for n in at.number_input if n.label.startswith("Page (of 3)"))
    page.set_value(3).run()
    assert not at.exception
    assert table_rows() == 30
    assert any("Rows 101–130 of 130" in c.value for c in at.caption)
    next(s for s in at.selectbox if s.label == "Rows per page").set_value(100).run()
    assert not at.exception
    assert any(n.label.startswith("Page (of 2)") for n in at.number_input)
