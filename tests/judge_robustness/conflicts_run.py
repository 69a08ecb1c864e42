"""A judged conflicts run for the judge-robustness tests (the sample banks, a simulated model)."""

from __future__ import annotations

from collections.abc import Callable

from typer.testing import Result


def judged_conflicts_run(cli: Callable[..., Result], run: str) -> Result:
    """Import the sample banks, generate ``run`` and judge it with ``sim/judge-lenient``.

    Returns:
        The ``conflicts judge`` call's result (for checks on its output).
    """
    assert cli("conflicts", "import", "--sample").exit_code == 0
    made = cli("conflicts", "generate", "--model", "sim/mc-balanced", "--run", run)
    assert made.exit_code == 0, made.output
    judged = cli("conflicts", "judge", "--run", run, "--judge", "sim/judge-lenient")
    assert judged.exit_code == 0, judged.output
    return judged
