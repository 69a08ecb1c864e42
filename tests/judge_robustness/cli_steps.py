"""CLI steps the judge-robustness tests share: a judged conflicts run, a robustness check."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

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


def strict_robustness(
    cli: Callable[..., Result], instrument: str, run: str, *, sample: int, bootstrap: int
) -> dict[str, Any]:
    """``judges robustness --json`` of ``run`` with ``sim/judge-strict`` as the alternative.

    Returns:
        The parsed JSON (its alternatives checked to be that judge alone).
    """
    got = cli(
        "judges", "robustness", "--instrument", instrument, "--run", run,
        "--judge", "sim/judge-strict", "--resamples", "3", "--sample", str(sample),
        "--bootstrap", str(bootstrap), "--json",
    )  # fmt: skip
    assert got.exit_code == 0, got.output
    data: dict[str, Any] = json.loads(got.output)
    assert data["alternatives"] == ["sim/judge-strict"]
    return data
