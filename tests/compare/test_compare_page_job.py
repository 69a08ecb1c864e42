"""The Compare page runs the comparison as a job and never shows a stale result (AppTest).

The disposition arms first answer 5 stems per tendency; the page's job compares them
(10 shared items). Then the study answers 3 more stems per tendency: the same inputs on
new data must give a new job and 16 shared items, not the 10 the page held before.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.jobs import list_jobs
from tests.app.apptest_support import APP, unescape
from tests.compare.conftest import battery_doc
from tests.study.jobs_support import wait_for_jobs

RUNS = ["cmp:d025-s1", "cmp:d075-s1"]


def _answer(n_stems: int) -> None:
    from study.disposition.runs import ArmSpec, add_arms, run_study

    with open_workspace_session(resolve_settings()) as session:
        if n_stems == 5:
            add_arms("cmp", [
                ArmSpec("d025-s1", "sim/disp-qwen-d025-s1", role="reference", dose=25,
                        train_seed=1, reasoning="off"),
                ArmSpec("d075-s1", "sim/disp-qwen-d075-s1", dose=75, train_seed=1,
                        reasoning="off"),
            ], session=session)  # fmt: skip
        run_study("cmp", battery_doc(n_stems), session=session, judge="sim/default",
                  repeat_share=0.0)  # fmt: skip


def _captions(at: AppTest) -> str:
    return unescape(" ".join(str(c.value) for c in at.caption))


def test_compare_page_runs_a_job_and_recomputes_after_new_data() -> None:
    _answer(5)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/compare.py")
    at.query_params["instrument"] = "disposition"
    at.query_params["run"] = RUNS
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    settings = resolve_settings()
    jobs = wait_for_jobs(settings)
    assert [(j.kind, j.state) for j in jobs] == [("compare", "done")], jobs
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "10 shared item(s)" in _captions(at)
    at.run()  # a rerun on the same data reuses the result: no second job
    with open_workspace_session(settings) as session:
        assert len(list_jobs(session=session)) == 1

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
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/compare.py")
    at.query_params["instrument"] = "disposition"
    at.query_params["run"] = RUNS
    at.run()
    wait_for_jobs(resolve_settings())
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert {"p_test", "p_test_adjusted", "test_detail"} <= set(table.columns), list(table.columns)
    assert (table["p_test_adjusted"] >= table["p_test"]).all()  # BH never lowers a p
    assert table["test_detail"].str.len().gt(0).all(), table["test_detail"]
