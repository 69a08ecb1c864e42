"""The ``cli`` job runner: a page's ``driftlens …`` job, started by ``study.jobs.run``.

Registered in the ``driftlens.job_runners`` entry-point group (``pyproject.toml``), so the
study-level job entry point finds the command line by registry and ``study`` never
imports ``app``. The command reports into its job row itself (:mod:`app.cli.job_hooks`).
"""

from __future__ import annotations

import sys
from pathlib import Path


def run_command(argv: list[str], workspace: Path | None) -> int:
    """Run ``driftlens [--workspace WS] ARGV…`` in this process; its exit status."""
    from app.cli import main

    root = ["--workspace", str(workspace)] if workspace is not None else []
    sys.argv = ["driftlens", *root, *argv]
    try:
        main()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0
