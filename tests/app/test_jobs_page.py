"""The Jobs page lists the workspace's jobs, links a result, resumes a stopped job (AppTest)."""

from __future__ import annotations

from sqlmodel import select

from storage.job_models import Job
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.questions import import_sample_questions
from tests.app.apptest_support import open_page
from tests.study.jobs_support import wait_for_jobs


def test_jobs_page_resumes_an_interrupted_job_and_links_the_run() -> None:
    settings = resolve_settings()
    argv = ["generate", "--model", "sim/default", "--run", "p", "--perturbations", "filler"]
    with open_workspace_session(settings) as session:
        import_sample_questions(session=session)
        # a page job whose process died (pid 0 long ago) and a shell job that failed
        session.add(Job(kind="generate", title="Generate p", argv=[*argv, "--samples", "1"],
                        scope={"run": "p"}, host="elsewhere", pid=1, state="interrupted",
                        error="the process ended without finishing"))  # fmt: skip
        failed = "no run named '<b>q</b>' in this workspace"
        session.add(Job(kind="label", title="**x** <b>y</b>", argv=["label"], origin="shell",
                        state="failed", error=failed))  # fmt: skip
    at = open_page("jobs.py")
    table = at.dataframe[0].value
    assert list(table["state"]) == ["failed", "interrupted"]
    assert table.iloc[0]["title"] == "**x** <b>y</b>"  # a dataframe cell: text, not markup
    at.selectbox(key="jobs_pick").set_value(1).run()
    next(b for b in at.button if b.label == "Resume").click().run()
    assert not at.exception, [e.value for e in at.exception]
    jobs = wait_for_jobs(settings)
    assert [j.state for j in jobs][:1] == ["done"] and jobs[0].argv == jobs[-1].argv
    with open_workspace_session(settings) as session:
        old = session.exec(select(Job).where(Job.id == 1)).one()
        assert old.resumed_by == jobs[0].id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    links = [str(getattr(e, "proto", "")) for e in at.get("page_link")]
    assert any('query_string: "run=p"' in x and "runs page" in x for x in links), links
