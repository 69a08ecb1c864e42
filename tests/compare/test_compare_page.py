"""The Compare page calls the compare service and never shows a stale result (AppTest).

The disposition arms first answer 5 stems per tendency; the page compares them (10 shared
items). Then the study answers 3 more stems per tendency: the same inputs on new data must
give 16 shared items, not the 10 the page held before. A small comparison is computed by
the page itself (no job, no command line); a big one (many replicates) is a background
job of the same typed service (``compare run``, :mod:`study.compare.request`).
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from llm.specs import ModelSpec
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.jobs import list_jobs
from tests.app.apptest_support import APP, unescape
from tests.compare.conftest import battery_doc, dose_pair
from tests.study.jobs_support import wait_for_jobs

RUNS = ["cmp:d025-s1", "cmp:d075-s1"]


def _answer(n_stems: int) -> None:
    from study.disposition.runs import add_arms, run_study

    with open_workspace_session(resolve_settings()) as session:
        if n_stems == 5:
            add_arms("cmp", dose_pair(), session=session)
        run_study(
            "cmp",
            battery_doc(n_stems),
            session=session,
            judge=ModelSpec.parse("sim/default"),
            repeat_share=0.0,
        )


def _captions(at: AppTest) -> str:
    return unescape(" ".join(str(c.value) for c in at.caption))


def _open() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/compare.py")
    at.query_params["instrument"] = "disposition"
    at.query_params["run"] = RUNS
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _jobs() -> list[tuple[str, str]]:
    with open_workspace_session(resolve_settings()) as session:
        return [(j.kind, j.state) for j in list_jobs(session=session)]


def test_a_small_comparison_is_computed_by_the_page_and_recomputed_after_new_data() -> None:
    _answer(5)
    at = _open()
    assert "10 shared item(s)" in _captions(at)
    assert _jobs() == []  # the service was called directly: no job, no command line
    _answer(8)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "16 shared item(s)" in _captions(at), _captions(at)
    assert "10 shared item(s)" not in _captions(at)
    assert _jobs() == []


def test_a_big_comparison_runs_as_a_job_of_the_service_and_recomputes_after_new_data() -> None:
    _answer(5)
    at = _open()
    at.number_input(key="cmp-B").set_value(4000).run()  # 1 pair x 4000 > INLINE_MAX_WORK
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    settings = resolve_settings()
    jobs = wait_for_jobs(settings)
    assert [(j.kind, j.state) for j in jobs] == [("compare run", "done")], jobs
    assert jobs[0].argv[:3] == ("@job", "compare", "run")  # the study-level job, no argv CLI
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "10 shared item(s)" in _captions(at)
    at.run()  # a rerun on the same data reuses the result: no second job
    assert len(_jobs()) == 1

    _answer(8)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    jobs = wait_for_jobs(settings)
    assert [j.state for j in jobs] == ["done", "done"], jobs
    at.run()
    assert "16 shared item(s)" in _captions(at), _captions(at)
    assert "10 shared item(s)" not in _captions(at)


def test_compare_page_shows_the_adjusted_test_p_and_its_detail() -> None:
    """The paired test's BH-adjusted p and its detail (ties, the exact p) are on the page,
    not only in the downloads (issue 37, item 11)."""
    _answer(5)
    at = _open()
    table = at.dataframe[0].value
    assert {"p_test", "p_test_adjusted", "test_detail"} <= set(table.columns), list(table.columns)
    assert (table["p_test_adjusted"] >= table["p_test"]).all()  # BH never lowers a p
    assert table["test_detail"].str.len().gt(0).all(), table["test_detail"]
