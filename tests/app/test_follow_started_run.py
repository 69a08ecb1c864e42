"""A page follows the run it has just started, before the run exists (issue 37, item 3).

The Memory conflicts page opens a new study's run in the address bar as its job starts;
the job's process stores the run later. Opened (or reloaded) on ``?run=<new>`` while that
job runs, the page must show that job, not the first stored run under an "unknown run"
line, and once the job has stored the run, show it (its report, its downloads).
"""

from __future__ import annotations

import os
import socket

from sqlmodel import select

from llm.specs import ModelSpec
from storage.job_models import Job
from storage.models import GenerationRun, ModelSpecRow
from storage.settings import resolve_settings
from storage.types import utcnow
from storage.workspace import open_workspace_session
from tests.app.apptest_support import open_page, unescape


def _conflict_run(name: str) -> None:
    with open_workspace_session(resolve_settings()) as session:
        spec = session.exec(
            select(ModelSpecRow).where(ModelSpecRow.spec == "sim/mc-balanced")
        ).first()
        if spec is None:
            spec = ModelSpecRow(spec="sim/mc-balanced", provider="sim", model="mc-balanced",
                             simulated=True)  # fmt: skip
            session.add(spec)
            session.flush()
        assert spec.id is not None
        session.add(GenerationRun(name=name, model_spec_id=spec.id, prompt_version="conflicts",
                                  config={"instrument": "conflicts"}, simulated=True))  # fmt: skip


def _texts(at: object) -> str:
    parts = [*at.info, *at.caption, *at.subheader]  # type: ignore[attr-defined]
    return unescape(" | ".join(str(p.value) for p in parts))


def test_conflicts_page_follows_the_started_run_through_a_reload() -> None:
    _conflict_run("old-study")
    with open_workspace_session(resolve_settings()) as session:
        # the started study's job: running (this process stands in for its pid)
        job = Job(kind="conflicts study", title="Memory-conflicts study 'new-study'",
                  argv=["conflicts", "study"], scope={"run": "new-study"},
                  host=socket.gethostname(), pid=os.getpid(), state="running")  # fmt: skip
        session.add(job)
        session.flush()
        job_id = job.id
    at = open_page("conflicts.py", params={"run": "new-study"})  # a reload of the page
    shown = _texts(at)
    assert "Following run 'new-study'" in shown, shown
    assert "unknown run" not in shown, shown
    assert "Report" not in shown, shown  # not the old study's report (nor its downloads)
    # the job stores the run and ends: the page opens that run
    _conflict_run("new-study")
    with open_workspace_session(resolve_settings()) as session:
        row = session.get(Job, job_id)
        assert row is not None
        row.state, row.finished_at = "done", utcnow()
        session.add(row)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert next(s for s in at.selectbox if s.label == "Run").value == "new-study"
    assert "Following run" not in _texts(at)


def test_sources_page_follows_the_started_run_through_a_reload() -> None:
    from study.sources.items import shipped_items
    from study.sources.plan import SourcesConfig
    from study.sources.sim.wiring import backend_for
    from study.sources.store import run_stored_sources

    items = shipped_items()[:2]
    with open_workspace_session(resolve_settings()) as session:
        run_stored_sources("old-run", items, backend_for(ModelSpec.parse("sim/src-paper"), items),
                           [SourcesConfig()], session=session)  # fmt: skip
        session.add(Job(kind="sources run", title="Source-reliance run 'new-run'",
                        argv=["sources", "run"], scope={"run": "new-run"},
                        host=socket.gethostname(), pid=os.getpid(), state="running"))  # fmt: skip
    at = open_page("sources.py", params={"results": "run:new-run"})
    shown = _texts(at)
    assert "Following run 'new-run'" in shown, shown
    assert "unknown run" not in shown and "Downloads" not in shown, shown
    assert not any("probes stored" in str(t.value) for t in at.text)  # not old-run's
