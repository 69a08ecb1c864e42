"""Submit, list, cancel and resume jobs (see the package docstring for the design).

A submitted job is ``python -m study.jobs.run --workspace WS RUNNER ARGS…`` (the
study-level entry point, :mod:`study.jobs.run`) started in its own session (process
group), so neither a reload nor the app server's exit stops it: a ``driftlens`` command
goes to the ``cli`` runner the workbench registers by entry point, a study-level job
(:func:`submit_study_job`) to an instrument's ``jobs`` part or a shared service's table;
``study`` imports nothing above it to start either. The database URL travels in
``DRIFTLENS_DB_URL``, not on the command line, where ``ps`` would show its password. The
process's output goes to ``jobs/job-<id>.log`` in the workspace.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from storage.errors import InputError, NotFoundError
from storage.job_models import Job
from storage.paths import stored_path
from storage.repo.leases import DEFAULT_STALE_AFTER_S, pid_alive
from storage.types import utcnow
from study.jobs.commands import STUDY_JOB, job_function, launch_args, study_job_argv
from study.jobs.records import JobRecord

#: The environment variable that tells a command which job row is its own.
JOB_ID_ENV = "DRIFTLENS_JOB_ID"
#: A submitted row whose process never reported within this time is dead.
START_GRACE_S = 60.0
#: A cancelled job's process that has not ended this long after SIGTERM gets SIGKILL: its
#: interrupted path (flush, release leases) normally takes well under a second, but a
#: process stuck in a native call or starved on a loaded machine would otherwise run on.
#: What it stored is kept either way, and a resume skips it.
CANCEL_GRACE_S = 8.0
#: Words that make an option or argument name one that would carry a secret; keys come
#: from the environment only. Matched as whole words of the name (``--api-key``,
#: ``hf_token``, ``apikey``), so ``--max-tokens`` or a ``cache_key`` pass; see
#: :func:`names_secret`.
_SECRET_WORDS = frozenset({"key", "apikey", "token", "password", "passwd", "secret"})
#: Words of a name that make a secret word harmless beside them: a count of tokens, a
#: sort key, a cache key are not secrets.
_HARMLESS_WITH = frozenset({"max", "min", "sort", "cache", "group"})


def names_secret(name: str) -> bool:
    """Whether an option or argument name is one that would carry a secret.

    The name is cut into words at ``-``, ``_`` and ``.``; it names a secret when a word is
    one of :data:`_SECRET_WORDS` and no word beside it says it is something else (a token
    budget, a sort or cache key). A substring test refused ``--max-tokens`` and
    ``cache_key``.

    Args:
        name: ``--api-key``, ``api_key``, ``max_tokens``...
    """
    words = [w for w in re.split(r"[-_.\s]+", name.lower()) if w]
    return any(w in _SECRET_WORDS for w in words) and not any(w in _HARMLESS_WITH for w in words)


# Popen objects of the jobs this process started: polled so finished children are reaped
# (a zombie would otherwise linger under the app server until it exits).
_children: list[subprocess.Popen[bytes]] = []


def _check_argv(argv: Sequence[str]) -> list[str]:
    out = [str(a) for a in argv]
    for arg in out:
        name = arg.split("=", 1)[0].lower()
        if name.startswith("--") and names_secret(name):
            raise InputError(
                f"A job's command line must not carry {name}: secrets come from the "
                "environment of the app server."
            )
    return out


#: Options whose value is a model spec, in every instrument's commands.
_MODEL_OPTIONS = frozenset({"--model", "-m", "--judge", "--primary"})


#: Keys of a study-level job's JSON arguments whose value is a model spec.
_MODEL_KEYS = frozenset({"model", "judge", "primary"})


def _check_models(args: Sequence[str]) -> None:
    """Refuse a job whose model spec or endpoint is unusable, before it is recorded.

    Raises:
        ConfigError: a malformed spec, or an endpoint whose variables are not set in the
            environment the job would inherit.
    """
    from llm.specs import check_endpoint

    if args and args[0] == STUDY_JOB and len(args) == 4:
        values = json.loads(args[3])
        for key in _MODEL_KEYS & set(values):
            if isinstance(values[key], str) and "/" in values[key]:
                check_endpoint(values[key])
        return
    for flag, value in itertools.pairwise(args):
        if flag in _MODEL_OPTIONS and "/" in value:
            check_endpoint(value)


def _signal(pid: int, sig: signal.Signals, *, group: bool) -> bool:
    """Send ``sig`` to the process (or its whole group); False when it is already gone."""
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)  # a shell's command: not its whole group
    except ProcessLookupError:
        return False
    return True


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks (``/proc``), to tell it from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[19]
    except (OSError, IndexError):
        return None


def _kill_after_grace(pid: int, started: str | None, group: bool) -> None:
    deadline = time.monotonic() + CANCEL_GRACE_S
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            _reap()
            return
        time.sleep(0.1)
    if pid_alive(pid) and _start_ticks(pid) == started:  # still the process we signalled
        _signal(pid, signal.SIGKILL, group=group)
    _reap()


def _reap() -> None:
    for child in list(_children):
        if child.poll() is not None:
            _children.remove(child)


def submit_job(
    *,
    session: Session,
    workspace: Path,
    db_url: str,
    kind: str,
    title: str,
    argv: Sequence[str],
    scope: Mapping[str, Any] | None = None,
    unit: str = "",
) -> JobRecord:
    """Record a job and start its command as a detached background process.

    Args:
        session: Open session (committed here: the process must see its row).
        workspace: The workspace folder (passed as ``--workspace``; the log goes under it).
        db_url: The database URL (passed in the environment, never on the command line).
        kind: The command path, e.g. ``generate`` (pages find their jobs by it).
        title: What a person reads on the pages.
        argv: The command after ``driftlens --workspace …``, e.g. ``["analyze", …]``.
        scope: What the job is about, e.g. ``{"run": "demo"}``.
        unit: What the progress counts (``responses``), when the page knows.

    Returns:
        The running job's record.

    Raises:
        InputError: an option of ``argv`` would carry a secret.
        ConfigError: a model of ``argv`` is malformed or its endpoint is not configured.
    """
    args = _check_argv(argv)
    _check_models(args)
    workspace = Path(workspace).resolve()
    row = Job(
        kind=kind,
        title=title,
        argv=args,
        scope=dict(scope or {}),
        origin="page",
        state="running",
        stage="starting",
        unit=unit,
        host=socket.gethostname(),
    )
    session.add(row)
    session.commit()
    assert row.id is not None
    log = workspace / "jobs" / f"job-{row.id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    row.log_path = stored_path(log, session=session)
    env = {**os.environ, JOB_ID_ENV: str(row.id), "DRIFTLENS_DB_URL": db_url}
    env.pop("DRIFTLENS_DEBUG", None)  # a job's log holds its one-line error, not a traceback
    command = [sys.executable, "-m", "study.jobs.run", "--workspace", str(workspace),
               *launch_args(args)]  # fmt: skip
    with log.open("ab") as out:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workspace,
            env=env,
            start_new_session=True,  # its own process group: a reload or server exit spares it
            close_fds=True,
        )
    _reap()
    _children.append(child)
    # The process writes its pid too; whichever comes first, both are the same value.
    session.execute(
        update(Job).where(col(Job.id) == row.id, col(Job.pid) == 0).values(pid=child.pid)
    )
    session.commit()
    return get_job(row.id, session=session)


def submit_study_job(
    *,
    session: Session,
    workspace: Path,
    db_url: str,
    runner: str,
    job: str,
    args: Mapping[str, Any],
    title: str,
    scope: Mapping[str, Any] | None = None,
    unit: str = "",
) -> JobRecord:
    """Record a study-level job and start it (``python -m study.jobs.run RUNNER JOB JSON``):
    the runner's jobs table runs it, no command line in between.

    Args:
        session: Open session (committed here).
        workspace: The workspace folder.
        db_url: The database URL (passed in the environment).
        runner: An instrument's plugin name (its ``jobs`` part), or a shared service's
            jobs table in the ``driftlens.job_runners`` entry-point group (``compare``).
        job: A kind its table names; the row's kind is ``"RUNNER JOB"``.
        args: The job's arguments (plain JSON; a secret is refused like an option's).
        title: What a person reads on the pages.
        scope: What the job is about (default: its ``run`` and ``model`` arguments).
        unit: What the progress counts.

    Raises:
        ConfigError: unknown runner, or it runs no jobs; a model is unusable.
        InputError: it has no job of that kind, or an argument would carry a secret.
    """
    job_function(runner, job)  # an unknown job is refused before a row is written
    secret = [k for k in args if names_secret(k)]
    if secret:
        raise InputError(
            f"A job's arguments must not carry {secret[0]!r}: secrets come from the "
            "environment of the app server."
        )
    default_scope = {k: v for k, v in args.items() if k in ("run", "model")}
    return submit_job(
        session=session, workspace=workspace, db_url=db_url, kind=f"{runner} {job}",
        title=title, argv=study_job_argv(runner, job, args),
        scope=default_scope if scope is None else scope, unit=unit,
    )  # fmt: skip


def _dead(row: Job, *, host: str) -> bool:
    """Whether a ``running`` row's process is gone (same-host pid, or a stale heartbeat)."""
    now = utcnow()
    if row.pid <= 0:
        return now - _aware(row.updated_at) > timedelta(seconds=START_GRACE_S)
    if row.host == host:
        return not pid_alive(row.pid)
    return now - _aware(row.updated_at) > timedelta(seconds=DEFAULT_STALE_AFTER_S)


def _aware(when: Any) -> Any:
    return when if when.tzinfo is not None else when.replace(tzinfo=utcnow().tzinfo)


def mark_interrupted(*, session: Session) -> int:
    """Mark ``running`` jobs whose process is gone as ``interrupted``; return how many.

    The update is conditional on the row still being ``running``, so a process that ends
    at the same moment keeps its own final state.
    """
    _reap()
    host = socket.gethostname()
    rows = session.exec(select(Job).where(col(Job.state) == "running")).all()
    marked = 0
    for row in rows:
        if _dead(row, host=host):
            done = session.execute(
                update(Job)
                .where(col(Job.id) == row.id, col(Job.state) == "running")
                .values(
                    state="interrupted",
                    finished_at=utcnow(),
                    error=row.error or "the process ended without finishing",
                )
            )
            marked += int(getattr(done, "rowcount", 0) or 0)
    if marked:
        session.commit()
    return marked


def _matches(row: Job, scope: Mapping[str, Any] | None) -> bool:
    if not scope:
        return True
    have = row.scope or {}
    return all(have.get(k) == v for k, v in scope.items())


def list_jobs(
    *,
    session: Session,
    kind: str | Sequence[str] | None = None,
    scope: Mapping[str, Any] | None = None,
    states: Sequence[str] | None = None,
    limit: int = 200,
) -> list[JobRecord]:
    """The workspace's jobs, newest first (dead ``running`` ones marked ``interrupted``).

    Args:
        session: Open session.
        kind: Only jobs of this kind (or these kinds).
        scope: Only jobs whose scope holds every one of these key/value pairs.
        states: Only jobs in these states.
        limit: At most this many (after the filters).
    """
    mark_interrupted(session=session)
    query = select(Job).order_by(col(Job.id).desc())
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        query = query.where(col(Job.kind).in_(kinds))
    if states is not None:
        query = query.where(col(Job.state).in_(list(states)))
    out: list[JobRecord] = []
    # populate_existing: the rows change under us (another process reports into them).
    for row in session.exec(query.execution_options(populate_existing=True)):
        if _matches(row, scope):
            out.append(JobRecord.from_row(row))
            if len(out) >= limit:
                break
    return out


def get_job(job_id: int, *, session: Session) -> JobRecord:
    """One job by id.

    Raises:
        NotFoundError: no job with this id.
    """
    row = session.get(Job, job_id, populate_existing=True)
    if row is None:
        raise NotFoundError(f"No job {job_id} in this workspace.")
    return JobRecord.from_row(row)


def cancel_job(job_id: int, *, session: Session) -> JobRecord:
    """Stop a running job: mark it ``cancelled``, then end its process (group).

    The row is marked first, so the process's own end (it reports only while ``running``)
    cannot overwrite the cancellation. What the command already stored is kept; a
    cancelled job can be resumed.

    Raises:
        NotFoundError: no job with this id.
        InputError: the job is not running.
    """
    mark_interrupted(session=session)
    job = get_job(job_id, session=session)
    if not job.running:
        raise InputError(f"Job {job_id} is not running (it is {job.state}).")
    session.execute(
        update(Job)
        .where(col(Job.id) == job_id, col(Job.state) == "running")
        .values(state="cancelled", finished_at=utcnow(), error="cancelled")
    )
    session.commit()
    if job.host == socket.gethostname() and job.pid > 0 and pid_alive(job.pid):
        group = job.origin == "page"  # a page's job: the command and anything it started
        if _signal(job.pid, signal.SIGTERM, group=group):
            threading.Thread(
                target=_kill_after_grace,
                args=(job.pid, _start_ticks(job.pid), group),
                name=f"cancel-job-{job_id}",
                daemon=True,
            ).start()
    _reap()
    return get_job(job_id, session=session)


#: How often a background cancellation tries its write (each waits the busy timeout).
CANCEL_TRIES = 3
# job id -> why its background cancellation failed (read and cleared by the page)
_cancel_failures: dict[int, str] = {}
_cancelling: set[int] = set()
_cancel_lock = threading.Lock()


def cancel_in_background(
    job_id: int,
    *,
    session: Session,
    open_session: Callable[[], AbstractContextManager[Session]],
) -> JobRecord:
    """Cancel a running job without waiting for it: :func:`cancel_job` runs in a thread.

    A page's *Cancel* wrote the job's row in its own script run; while the job's process
    held SQLite's one write lock (its answers are written in small transactions), the
    page waited the busy timeout out (35 s under load) before it showed anything. Here
    only reads happen in the caller (WAL readers never wait on the writer): the row's
    write and the process's end follow in a daemon thread with a session of its own.

    Args:
        job_id: The job.
        session: Open session, for the checks only (nothing is written with it).
        open_session: Opens the thread's own session (committed when its block ends).

    Returns:
        The job as it is now (still ``running``: see :func:`cancelling`).

    Raises:
        NotFoundError: no job with this id.
        InputError: the job is not running.
    """
    job = get_job(job_id, session=session)
    if not job.running:
        raise InputError(f"Job {job_id} is not running (it is {job.state}).")
    with _cancel_lock:
        if job_id in _cancelling:  # a second click: the first cancellation goes on
            return job
        _cancelling.add(job_id)
        _cancel_failures.pop(job_id, None)

    def run() -> None:
        from sqlalchemy.exc import OperationalError

        try:
            for attempt in range(CANCEL_TRIES):
                try:
                    with open_session() as own:
                        cancel_job(job_id, session=own)
                    return
                except InputError:
                    return  # it ended meanwhile: nothing left to cancel
                except OperationalError as exc:  # the write lock stayed taken
                    if attempt == CANCEL_TRIES - 1:
                        with _cancel_lock:
                            _cancel_failures[job_id] = (
                                f"Job {job_id} could not be cancelled: the database stayed "
                                f"busy ({str(exc.orig).strip() or 'locked'}); try again."
                            )
        finally:
            with _cancel_lock:
                _cancelling.discard(job_id)

    threading.Thread(target=run, name=f"cancel-request-{job_id}", daemon=True).start()
    return job


def cancelling(job_id: int) -> bool:
    """Whether a background cancellation of the job (:func:`cancel_in_background`) runs."""
    with _cancel_lock:
        return job_id in _cancelling


def cancel_failure(job_id: int) -> str | None:
    """Why the job's last background cancellation failed (``None``: it did not), once."""
    with _cancel_lock:
        return _cancel_failures.pop(job_id, None)


def resume_job(job_id: int, *, session: Session, workspace: Path, db_url: str) -> JobRecord:
    """Submit an interrupted, failed or cancelled job's command again (it resumes).

    Raises:
        NotFoundError: no job with this id.
        InputError: the job is running, done, or already resumed.
    """
    mark_interrupted(session=session)
    job = get_job(job_id, session=session)
    if job.resumed_by is not None:
        raise InputError(_already_resumed(job_id, job.resumed_by))
    if not job.resumable:
        raise InputError(f"Job {job_id} is {job.state}; only a stopped job can be resumed.")
    # Claimed in one conditional UPDATE before anything starts: two Resume clicks (two
    # tabs, two sessions) both read "not resumed" above, but only one of them changes
    # the row here; the other is refused instead of starting a second, spurious job.
    claimed = session.execute(
        update(Job)
        .where(col(Job.id) == job_id, col(Job.resumed_by).is_(None))
        .values(resumed_by=_RESUMING)
    )
    session.commit()
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        session.expire_all()
        raise InputError(_already_resumed(job_id, get_job(job_id, session=session).resumed_by))
    try:
        new = submit_job(
            session=session,
            workspace=workspace,
            db_url=db_url,
            kind=job.kind,
            title=job.title,
            argv=job.argv,
            scope=job.scope,
            unit=job.unit,
        )
    except BaseException:
        session.rollback()
        session.execute(update(Job).where(col(Job.id) == job_id).values(resumed_by=None))
        session.commit()
        raise
    session.execute(update(Job).where(col(Job.id) == job_id).values(resumed_by=new.id))
    session.commit()
    return new


#: ``resumed_by`` while a Resume is starting the new job (job ids start at 1).
_RESUMING = 0


def _already_resumed(job_id: int, by: int | None) -> str:
    if by == _RESUMING:
        return f"Job {job_id} is being resumed already."
    return f"Job {job_id} was already resumed as job {by}."
