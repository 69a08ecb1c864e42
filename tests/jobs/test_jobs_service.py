"""The job service on SQLite and PostgreSQL: real ``driftlens`` processes, real rows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import col, func, select

from storage.errors import InputError
from storage.job_models import Job
from storage.models import GenerationRun, Response
from storage.repo.leases import pid_alive
from storage.settings import Settings, resolve_settings
from storage.types import utcnow
from storage.workspace import open_workspace_session
from study.jobs import cancel_job, get_job, list_jobs, resume_job, submit_job
from study.jobs import service as job_service
from study.jobs.service import CANCEL_GRACE_S
from study.questions import import_sample_questions
from tests.study.jobs_support import wait_for_jobs, wait_for_progress

GENERATE = ["generate", "--model", "sim/default", "--run", "j", "--perturbations", "noise"]


def _settings(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Settings]:
    url = request.getfixturevalue("pg_url") if getattr(request, "param", "") == "pg" else None
    settings = resolve_settings(workspace=workspace, db_url=url)
    with open_workspace_session(settings) as session:
        import_sample_questions(session=session)
    yield settings


@pytest.fixture
def settings(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Settings]:
    """The test workspace (sample questions imported) on SQLite."""
    yield from _settings(request, workspace)


@pytest.fixture(params=["sqlite", "pg"])
def both(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Settings]:
    """The same on SQLite and on a fresh PostgreSQL database (a process start costs ~6 s,
    so only the report-and-end path runs on both)."""
    yield from _settings(request, workspace)


def _submit(settings: Settings, argv: list[str], **scope: str) -> int:
    with open_workspace_session(settings) as session:
        job = submit_job(
            session=session,
            workspace=settings.workspace,
            db_url=settings.db_url,
            kind=argv[0],
            title=" ".join(argv),
            argv=argv,
            scope=scope,
        )
    assert job.running and job.pid > 0 and job.origin == "page"
    return job.id


def _responses(settings: Settings, run: str) -> int:
    with open_workspace_session(settings) as session:
        return int(
            session.exec(
                select(func.count())
                .select_from(Response)
                .join(GenerationRun, col(GenerationRun.id) == col(Response.run_id))
                .where(col(GenerationRun.name) == run)
            ).one()
        )


def test_a_submitted_command_reports_into_its_row_and_ends_done(both: Settings) -> None:
    settings = both
    job_id = _submit(settings, [*GENERATE, "--samples", "1", "--label", "keywords"], run="j")
    (job,) = wait_for_jobs(settings)
    assert job.id == job_id and job.state == "done", job
    assert job.stage == "labeling j" and job.total > 0 and job.done == job.total
    assert job.result == {"run": "j"} and job.finished_at is not None
    assert job.error is None and job.scope == {"run": "j"}
    log = settings.workspace / str(job.log_path)
    assert "Labeled" in log.read_text()
    assert _responses(settings, "j") == job.total


def test_a_failing_command_keeps_its_one_line_error(settings: Settings) -> None:
    _submit(settings, ["label", "--run", "nope", "--labeler", "keywords"])
    (job,) = wait_for_jobs(settings)
    assert job.state == "failed"
    assert job.error == "no run named 'nope' in this workspace"
    assert job.resumable


def test_cancel_stops_the_process_and_resume_finishes_the_run(settings: Settings) -> None:
    job_id = _submit(settings, [*GENERATE, "--samples", "10"], run="j")
    running = wait_for_progress(settings, job_id)
    assert running.running, running
    with open_workspace_session(settings) as session:
        cancelled = cancel_job(job_id, session=session)
        with pytest.raises(InputError, match="not running"):
            cancel_job(job_id, session=session)
    assert cancelled.state == "cancelled"
    (job,) = wait_for_jobs(settings)
    assert job.state == "cancelled"  # the process's own end did not overwrite it
    # the process is gone (a zombie not yet reaped counts as gone): by its interrupted path
    # after SIGTERM, or by the SIGKILL that follows CANCEL_GRACE_S later
    for _ in range(int((CANCEL_GRACE_S + 12) * 10)):
        if not pid_alive(job.pid):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the cancelled job's process is still alive")
    partial = _responses(settings, "j")
    assert 0 < partial < running.total
    with open_workspace_session(settings) as session:
        new = resume_job(
            job_id, session=session, workspace=settings.workspace, db_url=settings.db_url
        )
    jobs = wait_for_jobs(settings)
    assert [j.id for j in jobs] == [new.id, job_id]
    assert jobs[0].state == "done" and jobs[1].resumed_by == new.id
    assert _responses(settings, "j") == running.total
    with open_workspace_session(settings) as session, pytest.raises(InputError, match="already"):
        resume_job(job_id, session=session, workspace=settings.workspace, db_url=settings.db_url)


def test_a_killed_process_is_seen_interrupted(settings: Settings) -> None:
    job_id = _submit(settings, [*GENERATE, "--samples", "10"], run="j")
    job = wait_for_progress(settings, job_id)
    os.killpg(job.pid, signal.SIGKILL)
    (seen,) = wait_for_jobs(settings)
    assert seen.state == "interrupted" and seen.resumable, seen
    # a row whose process never started is interrupted once the grace time is over
    with open_workspace_session(settings) as session:
        session.add(Job(kind="x", title="never started", state="running"))
        session.commit()
        session.execute(
            update(Job)
            .where(col(Job.title) == "never started")
            .values(updated_at=utcnow() - timedelta(minutes=5))
        )
        session.commit()
        states = {j.title: j.state for j in list_jobs(session=session)}
    assert states["never started"] == "interrupted"


def test_a_shell_command_records_its_own_row(settings: Settings) -> None:
    env = dict(os.environ, DRIFTLENS_DB_URL=settings.db_url)
    env.pop("DRIFTLENS_JOB_ID", None)
    driftlens = Path(sys.executable).with_name("driftlens")
    subprocess.run(
        [str(driftlens), "--workspace", str(settings.workspace), *GENERATE, "--samples", "1"],
        env=env,
        check=True,
        capture_output=True,
    )
    (job,) = wait_for_jobs(settings)
    assert (job.origin, job.kind, job.state) == ("shell", "generate", "done")
    assert list(job.argv) == [*GENERATE, "--samples", "1"]  # no --workspace, no --db
    assert job.scope == {"run": "j", "model": "sim/default"} and job.done == job.total > 0


def test_secrets_never_go_on_a_job_command_line(settings: Settings) -> None:
    with open_workspace_session(settings) as session, pytest.raises(InputError, match="api-key"):
        submit_job(
            session=session,
            workspace=settings.workspace,
            db_url=settings.db_url,
            kind="generate",
            title="x",
            argv=[*GENERATE, "--api-key=sk-123"],
        )
        assert session.exec(select(Job)).all() == []


def test_get_job_names_a_missing_id(settings: Settings) -> None:
    from storage.errors import NotFoundError

    with open_workspace_session(settings) as session, pytest.raises(NotFoundError, match="42"):
        get_job(42, session=session)


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cancel's escalation: SIGTERM first, SIGKILL once the grace has passed."""
    monkeypatch.setattr(job_service, "CANCEL_GRACE_S", 0.5)
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        time.sleep(0.5)  # the handler is installed
        assert job_service._signal(child.pid, signal.SIGTERM, group=True)
        time.sleep(0.3)
        assert child.poll() is None  # SIGTERM alone did not end it
        job_service._kill_after_grace(child.pid, job_service._start_ticks(child.pid), True)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("--api-key", True),
        ("--api-key=sk-1", True),
        ("api_key", True),
        ("apikey", True),
        ("hf_token", True),
        ("--password", True),
        ("client.secret", True),
        ("--max-tokens", False),
        ("max_token", False),
        ("sort_key", False),
        ("--cache-key", False),
        ("monkey", False),
        ("tokens_per_s", False),
    ],
)
def test_a_secret_is_a_word_of_the_name_not_a_substring(name: str, secret: bool) -> None:
    from study.jobs.service import names_secret

    assert names_secret(name.split("=", 1)[0]) is secret


def test_a_job_with_a_token_budget_is_not_refused_as_a_secret(settings: Settings) -> None:
    # the substring test refused --max-tokens: a token budget is no secret
    with open_workspace_session(settings) as session:
        job = submit_job(
            session=session,
            workspace=settings.workspace,
            db_url=settings.db_url,
            kind="generate",
            title="x",
            argv=[*GENERATE, "--max-tokens", "64"],
        )
        assert job.id is not None
