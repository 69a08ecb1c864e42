"""Long actions in chromium (issue #20 C, D, A and the Jobs page): each runs as a background
job that a reload does not stop, shows again after the reload, and ends where it should.

One served workspace for the module (sample questions, nothing else); the tests build on
each other in file order: C generates and labels the run that D analyses. The Jobs page
cancels a running job (its row and its process) and resumes a killed one.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest
from sqlmodel import col, func, select

from storage.models import Analysis, GenerationRun, Response, StepLabel
from storage.paths import resolve_stored_path
from storage.repo.leases import pid_alive
from storage.workspace import open_workspace_session
from study.jobs import JobRecord, get_job, list_jobs, submit_job
from study.jobs.service import CANCEL_GRACE_S
from study.questions import import_sample_questions
from tests.app.browser_support import (
    ARTIFACTS_ROOT,
    IDLE_JS,
    Served,
    answers_within,
    free_port,
    main_text,
    no_exception,
    served_workspace,
    start_driftlens,
    wait_for_streamlit,
)
from tests.study.jobs_support import wait_for_jobs, wait_for_progress

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

ARTIFACTS = ARTIFACTS_ROOT / "jobs"
RUN = "c-run"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_workspace(
        tmp_path_factory, "jobs", fill=lambda session: import_sample_questions(session=session)
    ) as served:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        yield served
    wait_for_jobs(served.settings)  # nothing of the module outlives it


def _running(served: Served, kind: str) -> JobRecord:
    deadline = time.monotonic() + 180  # a job process starting on a loaded machine
    while time.monotonic() < deadline:
        with open_workspace_session(served.settings) as session:
            found = [j for j in list_jobs(session=session, kind=kind) if j.running]
        if found:
            return found[0]
        time.sleep(0.3)
    raise AssertionError(f"no running {kind} job")


def _count(served: Served, model: type, run: str) -> int:
    with open_workspace_session(served.settings) as session:
        query = select(func.count()).select_from(model)
        if model is StepLabel:
            query = query.join(Response, col(Response.id) == col(StepLabel.response_id))
        query = query.join(GenerationRun, col(GenerationRun.id) == col(Response.run_id))
        return int(session.exec(query.where(col(GenerationRun.name) == run)).one())


def test_c_generation_survives_a_reload_and_labels_the_run(served: Served, page: Page) -> None:
    page.goto(f"{served.url}/runs", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Runs")
    page.get_by_text("Launch a run", exact=True).click()
    page.get_by_label("Run name").fill(RUN)
    page.get_by_label("Perturbations (all, none, a class, a category, keys)").fill("all")
    page.get_by_label("Samples").fill("1")
    page.get_by_label("Samples").press("Enter")
    wait_for_streamlit(page, "Runs")  # the rerun the commit started has ended (no fixed wait)
    page.get_by_role("button", name="Generate and label").click()
    job = _running(served, "generate")
    wait_for_progress(served.settings, job.id)
    page.reload()  # used to stop the page's generation and leave the run interrupted
    main = page.locator('[data-testid="stMain"]')
    main.get_by_text(f"Generate and label '{RUN}'").first.wait_for(timeout=60_000)
    # the panel's caption is drawn after its progress line (CI read the page in between);
    # on a quick machine the job may already have ended, which shows its outcome instead
    caption = main.get_by_text("It runs in the background")
    caption.or_(main.get_by_text(f"Generate and label '{RUN}': done.")).first.wait_for(
        timeout=30_000
    )
    page.screenshot(path=str(ARTIFACTS / "c-after-reload.png"), full_page=True)
    main.get_by_text(f"Generate and label '{RUN}': done.").wait_for(timeout=300_000)
    no_exception(page)
    with open_workspace_session(served.settings) as session:
        ended = get_job(job.id, session=session)
    assert ended.state == "done", ended
    responses = _count(served, Response, RUN)
    assert responses > 0 and _count(served, StepLabel, RUN) > 0  # the labels too


def _analyse_from_page(page: Page, served: Served, bootstrap: int) -> int:
    page.goto(f"{served.url}/analysis", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Analysis")
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    box = page.get_by_label("Bootstrap replicates B")
    for _ in range(3):  # the expander is open on a page without analyses, closed after
        if box.is_visible():
            break
        page.get_by_text("New analysis", exact=True).click()
        # its form is built by the rerun the click starts: wait for it, not a fixed time
        try:
            box.wait_for(state="visible", timeout=30_000)
        except PlaywrightTimeoutError:  # the click landed during a rerun and was lost
            wait_for_streamlit(page, "Analysis")
    box.fill(str(bootstrap))
    box.press("Enter")
    wait_for_streamlit(page, "Analysis")  # the rerun the commit started has ended
    page.get_by_role("button", name="Run analysis").click()
    job = _running(served, "analyze")
    page.reload()  # D: the reload shows the running job, then opens the analysis it stored
    main = page.locator('[data-testid="stMain"]')
    with open_workspace_session(served.settings) as session:
        still = get_job(job.id, session=session).running
    if still:  # the reloaded page shows the running job (it used to show the old analysis)
        main.get_by_text(f"B = {bootstrap:,}:").first.wait_for(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / f"d-running-B{bootstrap}.png"), full_page=True)
    main.get_by_text("stored and shown below").wait_for(timeout=300_000)
    no_exception(page)
    with open_workspace_session(served.settings) as session:
        ended = get_job(job.id, session=session)
    assert ended.state == "done" and ended.result, ended
    analysis_id = int(ended.result["analysis"])
    assert re.search(rf"analysis={analysis_id}\b", page.url), page.url
    return analysis_id


def test_d_and_a_analyses_open_after_a_reload_each_in_its_own_folder(
    served: Served, page: Page
) -> None:
    first = _analyse_from_page(page, served, 2000)
    second = _analyse_from_page(page, served, 3000)
    page.screenshot(path=str(ARTIFACTS / "d-second-analysis.png"), full_page=True)
    with open_workspace_session(served.settings) as session:
        rows = {a.id: a for a in session.exec(select(Analysis)).all()}
        folders = {
            i: resolve_stored_path(str(rows[i].out_dir), session=session) for i in (first, second)
        }
    assert folders[first] != folders[second]  # A: one folder per stored analysis
    for i, b in ((first, 2000), (second, 3000)):
        assert f"· B = {b} ·" in (folders[i] / "report.html").read_text(encoding="utf-8")
    # the older analysis still opens from its link, with its own report
    page.goto(f"{served.url}/analysis?analysis={first}", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Analysis")
    no_exception(page)
    assert f"analysis={first}" in page.url and "unknown analysis" not in main_text(page)


def _job_after(served: Served, job_id: int) -> None:
    deadline = time.monotonic() + 180  # a job process starting on a loaded machine
    while time.monotonic() < deadline:
        with open_workspace_session(served.settings) as session:
            if any(j.id > job_id for j in list_jobs(session=session)):
                return
        time.sleep(0.3)
    raise AssertionError(f"no job was submitted after job {job_id}")


def _slow_job(
    served: Served, run: str, perturbations: str = "noise", *, model: str = "sim/default"
) -> JobRecord:
    """A submitted generation that has reported its first unit."""
    # ten samples of each condition at one request in flight
    argv = ["generate", "--model", model, "--run", run, "--perturbations", perturbations]
    argv += ["--samples", "10", "--concurrency", "1"]
    with open_workspace_session(served.settings) as session:
        job = submit_job(
            session=session,
            workspace=served.settings.workspace,
            db_url=served.settings.db_url,
            kind="generate",
            title=f"Generate {run}",
            argv=argv,
            scope={"run": run},
        )
    return wait_for_progress(served.settings, job.id)


def _wait_until(what: str, check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {seconds:.0f} s")
        time.sleep(0.2)


@pytest.fixture
def slow_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The simulator served over HTTP with 200 ms per answer, as ``openai-api/slow/…``.

    A job on it runs for minutes while using almost no CPU (the sim in-process answers a
    whole run in about two seconds, before a page could show it running). The variables go
    to the jobs this test submits (they inherit its environment).
    """
    port = free_port()
    server = start_driftlens("sim", "serve", "--port", str(port), "--delay-ms", "200")
    try:
        listening = answers_within(
            server, lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close(), 60
        )
        assert listening, "no simulator"
        monkeypatch.setenv("SLOW_BASE_URL", f"http://127.0.0.1:{port}/v1")
        monkeypatch.setenv("SLOW_API_KEY", "any")
        yield "openai-api/slow/default"
    finally:
        server.terminate()
        server.wait(timeout=15)


def test_jobs_page_cancel_stops_a_running_job(
    served: Served, page: Page, slow_endpoint: str
) -> None:
    running = _slow_job(served, "cancelled", model=slow_endpoint)
    assert running.running and pid_alive(running.pid), running
    page.goto(f"{served.url}/jobs?job={running.id}", wait_until="domcontentloaded")
    main = page.locator('[data-testid="stMain"]')
    cancel = main.get_by_role("button", name="Cancel", exact=True)
    cancel.wait_for(timeout=60_000)  # the sidebar names "Jobs" before the page has run
    wait_for_streamlit(page, "Jobs")
    assert cancel.count() == 1, main_text(page)
    # A click while the script runs is lost (the widgets are being replaced): click once
    # the app is idle, and only once, so a click that does not reach the server fails here.
    page.wait_for_function(IDLE_JS, timeout=60_000)
    cancel.click()

    def state() -> str:
        with open_workspace_session(served.settings) as session:
            return get_job(running.id, session=session).state

    _wait_until("the job row was not marked cancelled", lambda: state() == "cancelled", 60)
    # SIGTERM, then SIGKILL after the grace period: the process is gone either way
    _wait_until(
        f"process {running.pid} was still alive",
        lambda: not pid_alive(running.pid),
        CANCEL_GRACE_S + 20,
    )
    main.get_by_text("cancelled").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "jobs-cancelled.png"), full_page=True)
    no_exception(page)
    assert state() == "cancelled"  # the process's end did not overwrite it


def test_jobs_page_resumes_an_interrupted_job(served: Served, page: Page) -> None:
    killed = _slow_job(served, "killed")
    os.killpg(killed.pid, signal.SIGKILL)  # the process dies without ending its row
    page.goto(f"{served.url}/jobs?job={killed.id}", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Jobs")
    main = page.locator('[data-testid="stMain"]')
    main.get_by_text("interrupted: the process ended without finishing").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "jobs-interrupted.png"), full_page=True)
    page.get_by_role("button", name="Resume").click()
    _job_after(served, killed.id)  # the click is handled by the server's next run
    resumed = wait_for_jobs(served.settings)[0]
    assert resumed.state == "done" and resumed.argv == killed.argv, resumed
    with open_workspace_session(served.settings) as session:
        assert get_job(killed.id, session=session).resumed_by == resumed.id
