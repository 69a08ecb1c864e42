"""What a job row's ``argv`` means: a study-level job or a ``driftlens`` command line.

A study-level job's ``argv`` is ``[STUDY_JOB, RUNNER, KIND, JSON]``; any other is the
command line after ``driftlens``. :func:`launch_args` turns either into the arguments of
the study-level entry point (``python -m study.jobs.run RUNNER ARGS…``,
:mod:`study.jobs.run`), :func:`command_line` into what a person would type, and
:func:`job_function` finds a job's function by registry: ``RUNNER`` is an instrument
(its plugin's ``jobs`` part) or a shared study service that announces a jobs table in the
``driftlens.job_runners`` entry-point group (``compare``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from storage.errors import ConfigError, InputError

#: The entry-point group of the runners that are not instruments (``cli``).
RUNNER_GROUP = "driftlens.job_runners"
#: The runner of the workbench's ``driftlens`` commands.
CLI_RUNNER = "cli"
#: First word of a stored ``argv`` that is a study-level job, not a command line.
STUDY_JOB = "@job"


def study_job_argv(instrument: str, kind: str, args: Mapping[str, Any]) -> list[str]:
    """The stored ``argv`` of a study-level job (what :func:`launch_args` reads back)."""
    return [STUDY_JOB, instrument, kind, json.dumps(dict(args), sort_keys=True)]


def launch_args(argv: Sequence[str]) -> list[str]:
    """``RUNNER ARGS…`` for a stored ``argv``: a study-level job's, or a command line's."""
    if argv and argv[0] == STUDY_JOB:
        return list(argv[1:])
    return [CLI_RUNNER, *argv]


def command_line(argv: Sequence[str]) -> str:
    """How a person would start the stored ``argv`` from a shell (the Jobs page shows it)."""
    import shlex

    if argv and argv[0] == STUDY_JOB:
        return shlex.join(["python", "-m", "study.jobs.run", *argv[1:]])
    return " ".join(["driftlens", *argv])  # as the Jobs page always showed a command


def registered_runner(name: str) -> object | None:
    """What the ``driftlens.job_runners`` entry point ``name`` names (``None``: none does):
    a jobs table (kind → function) or a runner of raw arguments (``cli``)."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=RUNNER_GROUP):
        if entry.name == name:
            return entry.load()
    return None


def job_function(runner: str, kind: str) -> Callable[..., Mapping[str, Any]]:
    """The function a runner's jobs table names for ``kind``.

    Args:
        runner: a shared service's jobs table in the ``driftlens.job_runners`` group, or an
            instrument (its plugin's ``jobs`` part).
        kind: the job's kind in that table.

    Raises:
        ConfigError: no such runner or instrument, or it has no jobs table.
        InputError: it has no job of that kind (its kinds are named).
    """
    from driftlens_plugins import get_instrument, load_ref

    table = registered_runner(runner)
    if table is None:
        plugin = get_instrument(runner)
        if plugin.jobs is None:
            raise ConfigError(f"Instrument {runner!r} runs no background jobs.")
        table = load_ref(plugin.jobs)
    if not isinstance(table, Mapping):
        raise ConfigError(f"Job runner {runner!r} has no table of jobs.")
    fn = table.get(kind)
    if fn is None:
        known = ", ".join(sorted(table)) or "none"
        raise InputError(f"{runner!r} has no job {kind!r} (it has: {known}).")
    return fn  # type: ignore[no-any-return,unused-ignore]
