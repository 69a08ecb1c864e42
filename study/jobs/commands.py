"""What a job row's ``argv`` means: an instrument's job or a ``driftlens`` command line.

An instrument job's ``argv`` is ``[PLUGIN_JOB, INSTRUMENT, KIND, JSON]``; any other is the
command line after ``driftlens``. :func:`launch_args` turns either into the arguments of
the study-level entry point (``python -m study.jobs.run RUNNER ARGS…``,
:mod:`study.jobs.run`), :func:`command_line` into what a person would type, and
:func:`job_function` finds an instrument job's function through the plugin registry.
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
#: First word of a stored ``argv`` that is an instrument job, not a command line.
PLUGIN_JOB = "@plugin"


def plugin_job_argv(instrument: str, kind: str, args: Mapping[str, Any]) -> list[str]:
    """The stored ``argv`` of an instrument job (what :func:`launch_args` reads back)."""
    return [PLUGIN_JOB, instrument, kind, json.dumps(dict(args), sort_keys=True)]


def launch_args(argv: Sequence[str]) -> list[str]:
    """``RUNNER ARGS…`` for a stored ``argv``: an instrument job's, or a command line's."""
    if argv and argv[0] == PLUGIN_JOB:
        return list(argv[1:])
    return [CLI_RUNNER, *argv]


def command_line(argv: Sequence[str]) -> str:
    """How a person would start the stored ``argv`` from a shell (the Jobs page shows it)."""
    import shlex

    if argv and argv[0] == PLUGIN_JOB:
        return shlex.join(["python", "-m", "study.jobs.run", *argv[1:]])
    return " ".join(["driftlens", *argv])  # as the Jobs page always showed a command


def job_function(instrument: str, kind: str) -> Callable[..., Mapping[str, Any]]:
    """The function the instrument's ``jobs`` part names for ``kind``.

    Raises:
        ConfigError: no such instrument, or it has no jobs.
        InputError: it has no job of that kind (its kinds are named).
    """
    from driftlens_plugins import get_instrument, load_ref

    plugin = get_instrument(instrument)
    if plugin.jobs is None:
        raise ConfigError(f"Instrument {instrument!r} runs no background jobs.")
    table = load_ref(plugin.jobs)
    if not isinstance(table, Mapping):
        raise ConfigError(f"Instrument {instrument!r}: jobs {plugin.jobs!r} is not a mapping.")
    fn = table.get(kind)
    if fn is None:
        known = ", ".join(sorted(table)) or "none"
        raise InputError(f"Instrument {instrument!r} has no job {kind!r} (it has: {known}).")
    return fn
