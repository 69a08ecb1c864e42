"""The study-level entry point every background job starts through.

``python -m study.jobs.run [--workspace WS] RUNNER ARGS…`` — what
:func:`study.jobs.submit_job` launches. ``RUNNER`` is resolved by registry, never by an
import of a room above ``study``:

* a jobs table: ``ARGS`` are ``KIND JSON``. An instrument's name finds its plugin's
  ``jobs`` part (:class:`~driftlens_plugins.instrument.InstrumentPlugin`); a shared study
  service announces its table in the ``driftlens.job_runners`` entry-point group
  (:data:`RUNNER_GROUP`: ``compare``). The table maps ``KIND`` to a function called as
  ``fn(args, *, session, settings)`` with the JSON object as ``args``. This module attaches
  to the job row (``DRIFTLENS_JOB_ID``; a run from a shell records a ``shell`` row of its
  own), turns SIGTERM (*Cancel*) into the interrupted path, stores the function's result
  in the row and ends it ``done``, ``failed`` (one sentence) or ``interrupted``;
* a runner of raw arguments in that group: ``ARGS`` go to it unchanged. The workbench's
  command line registers itself there as ``cli`` (its commands report into their job rows
  themselves), so a page's ``driftlens …`` job starts through here too.

A job row stores its ``argv``: a study-level job's is ``[STUDY_JOB, RUNNER, KIND, JSON]``
(:data:`~study.jobs.commands.STUDY_JOB`), a command's the command line after ``driftlens``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from storage.errors import DriftLensError, InputError
from study.jobs.commands import (
    CLI_RUNNER,
    RUNNER_GROUP,
    STUDY_JOB,
    command_line,
    job_function,
    registered_runner,
)

#: The exit status of an interrupted (cancelled) job, as a shell's Ctrl-C.
INTERRUPTED_EXIT = 130


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the interrupted path: stored work kept, leases released


def _parse_args(text: str) -> dict[str, Any]:
    try:
        args = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"A job's arguments must be a JSON object: {exc.msg}.") from None
    if not isinstance(args, dict):
        raise InputError("A job's arguments must be a JSON object.")
    return args


def run_study_job(runner: str, kind: str, args_json: str, *, workspace: Path | None) -> int:
    """Run one study-level job in this process, reporting into its job row; the exit status.

    Every failure ends as one sentence on stderr and in the row, never a traceback.
    """
    from storage.engine import make_engine
    from storage.safe_text import escape_control, redact_secrets
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.jobs.reporter import attach_reporter, ensure_reporter, finish_current, record_result

    settings = resolve_settings(workspace=workspace)
    argv = [STUDY_JOB, runner, kind, args_json]
    try:
        # the session first: it brings a fresh workspace's schema to head, job table included
        with open_workspace_session(settings) as session:
            engine = make_engine(settings.db_url)
            raw = os.environ.get("DRIFTLENS_JOB_ID", "")
            if raw.isdigit():
                attach_reporter(engine, int(raw))
            else:
                scope = {k: v for k, v in _parse_args(args_json).items() if k in ("run", "model")}
                ensure_reporter(engine, kind=f"{runner} {kind}", title=command_line(argv),
                                argv=argv, scope=scope)  # fmt: skip
            signal.signal(signal.SIGTERM, _on_sigterm)
            fn = job_function(runner, kind)
            result = fn(_parse_args(args_json), session=session, settings=settings)
        record_result(**dict(result))
    except KeyboardInterrupt:
        finish_current("interrupted", error="interrupted")
        sys.stderr.write("Interrupted; what was stored is kept, and resuming continues it.\n")
        return INTERRUPTED_EXIT
    except Exception as exc:
        known = isinstance(exc, DriftLensError)
        message = str(exc) if known else f"{type(exc).__name__}: {exc}"
        line = escape_control(redact_secrets(" ".join(message.split())))
        finish_current("failed", error=line)
        sys.stderr.write(f"error: {line}\n")
        return 1
    finish_current("done")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``[--workspace WS] RUNNER ARGS…`` → the job's exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    workspace: Path | None = None
    if args[:1] == ["--workspace"] and len(args) >= 2:
        workspace, args = Path(args[1]), args[2:]
    if not args:
        sys.stderr.write("error: usage: python -m study.jobs.run [--workspace WS] RUNNER ARGS…\n")
        return 2
    name, rest = args[0], args[1:]
    runner = registered_runner(name)
    if runner is not None and not isinstance(runner, Mapping):
        return runner(rest, workspace)  # type: ignore[operator]
    if name == CLI_RUNNER:  # an install older than the entry point: say how to fix it
        sys.stderr.write(
            f"error: no {RUNNER_GROUP!r} entry point named 'cli' is installed; reinstall the "
            "workbench (scripts/setup.sh) so its commands can run as jobs.\n"
        )
        return 1
    if len(rest) != 2:
        sys.stderr.write(f"error: a study-level job takes KIND and JSON after {name!r}.\n")
        return 2
    return run_study_job(name, rest[0], rest[1], workspace=workspace)


if __name__ == "__main__":
    raise SystemExit(main())
