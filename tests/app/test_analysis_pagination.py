"""The Analysis page shows its example pairs a page at a time, reading only that page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event

from storage.models import Response
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.analysis import analyze_run
from study.reasoning.stored import analysis_examples, example_page, get_analysis
from tests.analysis._sim_workspace import LABELER, RUN, build_sim_workspace
from tests.app.apptest_support import open_page

# Two categories per class in the simulated workspace: 3 classes × 2 = 6 example pairs.
PAIRS = 6


@pytest.fixture
def analysis_id(workspace: Path) -> int:
    with open_workspace_session(resolve_settings()) as session:
        build_sim_workspace(session, n_questions=5)
        result = analyze_run(
            RUN, LABELER, session=session, out_dir=workspace / "r", bootstrap=200, seed=3
        )
    return result.analysis_id


@pytest.fixture
def loaded_responses() -> Iterator[list[int]]:
    """Ids of the Response rows loaded while the test runs."""
    loaded: list[int] = []

    def count(target: Response, _context: object) -> None:
        loaded.append(target.id or 0)

    event.listen(Response, "load", count)
    yield loaded
    event.remove(Response, "load", count)


def test_example_page_is_a_slice_that_reads_only_its_rows(
    analysis_id: int, loaded_responses: list[int]
) -> None:
    with open_workspace_session(resolve_settings()) as session:
        stored = get_analysis(analysis_id, session=session)
        whole = analysis_examples(stored, session=session)
        assert len(whole) == PAIRS
        loaded_responses.clear()
        pages = [example_page(stored, session=session, offset=o, limit=4) for o in (0, 4, 8)]
        assert [len(p.pairs) for p in pages] == [4, 2, 0]
        assert pages[0].pages == 2 and pages[1].total == PAIRS and pages[1].offset == 4
        assert pages[0].pairs + pages[1].pairs == whole
        session.expunge_all()
        loaded_responses.clear()
        one = example_page(stored, session=session, offset=5, limit=1)
        assert one.pairs == whole[5:]
        # A baseline and a perturbed response: not the run, not the other pairs.
        assert len(set(loaded_responses)) == 2
        with pytest.raises(ValueError):
            example_page(stored, session=session, limit=0)


def test_analysis_page_pages_through_the_example_pairs(analysis_id: int) -> None:
    at = open_page("analysis.py", timeout=180)

    def pair_titles() -> list[str]:
        return [e.label for e in at.expander if " · DTW " in e.label]

    assert len(pair_titles()) == PAIRS
    assert any(f"Pairs 1–{PAIRS} of {PAIRS}" in c.value for c in at.caption)
    next(s for s in at.selectbox if s.label == "Pairs per page").set_value(5).run()
    assert not at.exception, [e.value for e in at.exception]
    first = pair_titles()
    assert len(first) == 5 and any(f"Pairs 1–5 of {PAIRS}" in c.value for c in at.caption)
    page = next(n for n in at.number_input if n.label.startswith("Example page (of 2)"))
    page.set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    second = pair_titles()
    assert len(second) == 1 and second[0] not in first
    assert any(f"Pairs 6–6 of {PAIRS}" in c.value for c in at.caption)
