"""The CLI's side of the job system (:mod:`study.jobs`).

* :func:`attach_from_env`: in a submitted job (``DRIFTLENS_JOB_ID`` set), the root
  callback attaches to its row before the command runs, and turns SIGTERM (*Cancel*) into
  the Ctrl-C path, so what the command holds is committed or rolled back, not cut off.
* :func:`report_stage` / :func:`report_progress`: each progress bar is a stage of the job;
  a command started from a shell creates its own ``shell`` row at its first bar, so
  long CLI work shows on the Jobs page too.
* :func:`finish`: the entry point ends the row with the command's outcome.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from storage.errors import DriftLensError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

_attached = False
_root: tuple[Path | None, str | None] | None = None
#: Options whose value a shell job's scope keeps (what pages filter their jobs on).
SCOPE_OPTIONS = ("run", "labeler", "study", "model")


def remember_root(workspace: Path | None, db_url: str | None) -> None:
    """Keep the root options: a shell command's first progress bar opens its job row."""
    global _root
    _root = (workspace, db_url)


def _engine_for_shell() -> Engine | None:
    from storage.engine import make_engine
    from storage.settings import resolve_settings

    if _root is None:
        return None
    return make_engine(resolve_settings(workspace=_root[0], db_url=_root[1]).db_url)


def command_path(argv: list[str]) -> str:
    """The command's words before its first option, e.g. ``ontology round``."""
    words: list[str] = []
    for arg in argv:
        if arg.startswith("-"):
            break
        words.append(arg)
    return " ".join(words) or "driftlens"


def argv_scope(argv: list[str]) -> dict[str, str]:
    """The scope of a shell job: the first ``--run``/``--labeler``/``--study``/``--model``."""
    scope: dict[str, str] = {}
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        key = name.removeprefix("--")
        if name.startswith("--") and key in SCOPE_OPTIONS and key not in scope:
            if eq:
                scope[key] = value
            elif i + 1 < len(argv):
                scope[key] = argv[i + 1]
    return scope


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the interrupted path: stored work kept, leases released


def attach_from_env(workspace: Path | None, db_url: str | None) -> None:
    """Attach to the job row named by ``DRIFTLENS_JOB_ID`` (a no-op without it)."""
    global _attached
    raw = os.environ.get("DRIFTLENS_JOB_ID")
    if not raw or _attached:
        return
    try:
        job_id = int(raw)
    except ValueError:
        raise DriftLensError(f"DRIFTLENS_JOB_ID must be a job id, not {raw!r}.") from None
    from storage.engine import make_engine
    from storage.settings import resolve_settings
    from study.jobs.reporter import attach_reporter

    settings = resolve_settings(workspace=workspace, db_url=db_url)
    attach_reporter(make_engine(settings.db_url), job_id)
    signal.signal(signal.SIGTERM, _on_sigterm)
    _attached = True


def report_stage(description: str, *, unit: str | None = None) -> None:
    """A progress bar opened: the job's stage (a shell command records its row here)."""
    from study.jobs.reporter import current_reporter, ensure_reporter, shell_argv

    reporter = current_reporter()
    if reporter is None:
        try:
            engine = _engine_for_shell()
        except DriftLensError:
            return  # no database: the command itself will say so
        if engine is None:
            return
        argv = shell_argv(sys.argv[1:])
        try:
            reporter = ensure_reporter(
                engine,
                kind=command_path(argv),
                title=shlex.join(["driftlens", *argv]),
                argv=argv,
                scope=argv_scope(argv),
            )
        except Exception:
            return
    reporter.stage(description, unit=unit)


def report_progress(done: int, total: int) -> None:
    """The current stage's counts (throttled by the reporter's writer)."""
    from study.jobs.reporter import current_reporter

    reporter = current_reporter()
    if reporter is not None:
        reporter.progress(done, total)


def finish(rc: int, *, error: str | None = None, interrupted: bool = False) -> None:
    """End this process's job row with the command's outcome."""
    if "study.jobs.reporter" not in sys.modules:
        return
    from storage.safe_text import escape_control, redact_secrets
    from study.jobs.reporter import finish_current

    if error is not None:  # stored and shown on pages: no key, no terminal escape
        error = escape_control(redact_secrets(error))
    if interrupted:
        finish_current("interrupted", error=error or "interrupted")
    elif rc == 0:
        finish_current("done")
    else:
        finish_current("failed", error=error or f"the command ended with exit status {rc}")
