"""``driftlens plan calibration``: the slice a target half-width needs, from a report's pilot."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from tests.calibration.conftest import RUN, Slice
from tests.cli_runner import CliOutcome, cli_runner


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run ``driftlens ARGS`` as the console script does."""
    return cli_runner(capsys, monkeypatch)


def test_plan_from_a_report_pilot(
    pulled_slice: Callable[..., Slice],
    db: Callable[[], AbstractContextManager[Session]],
    tmp_path: Path,
    run_cli: Callable[..., CliOutcome],
) -> None:
    from study.conflicts.report import build_report

    pulled_slice(limit=60)
    with db() as session:
        build_report([RUN], session=session, out_dir=tmp_path / "out", bootstrap=200, seed=1)
    stats = str(tmp_path / "out" / "stats.json")
    wide = run_cli(
        "plan", "calibration", "--stats", stats, "--what", "d2", "--half-width", "0.7", "--json"
    )
    tight = run_cli(
        "plan", "calibration", "--stats", stats, "--what", "d2", "--half-width", "0.4", "--json"
    )
    assert wide.code == 0 and tight.code == 0, wide.err + tight.err
    a, b = wide.json(), tight.json()
    assert a["rectifier_sd"] > 0 and 0 <= a["lambda"] <= 1
    assert a["humans"] is not None and b["humans"] is not None and b["humans"] > a["humans"]
    z = 1.959963984540054
    half = z * math.sqrt(
        b["rectifier_sd"] ** 2 / b["humans"] + b["lambda"] ** 2 * b["model_sd"] ** 2 / b["items"]
    )
    assert half <= 0.4
    # bad input: one line each
    assert (
        "no calibrated mean of 'zz'"
        in run_cli(
            "plan", "calibration", "--stats", stats, "--what", "zz", "--half-width", "0.3"
        ).one_line()
    )
    assert (
        "Give --stats FILE --what NAME"
        in run_cli("plan", "calibration", "--half-width", "0.3").one_line()
    )
    assert "must be positive" in run_cli(
        "plan", "calibration", "--half-width", "-1", "--rectifier-sd", "1", "--model-sd", "1",
        "--items", "100",
    ).one_line()  # fmt: skip
    assert "Cannot read" in run_cli(
        "plan", "calibration", "--stats", str(tmp_path / "none.json"), "--what", "d2",
        "--half-width", "0.3",
    ).one_line()  # fmt: skip


def test_conflicts_report_prints_the_headline_and_the_other(
    pulled_slice: Callable[..., Slice], tmp_path: Path, run_cli: Callable[..., CliOutcome]
) -> None:
    pulled_slice(limit=60)
    got = run_cli(
        "conflicts", "report", "--run", RUN, "--out", str(tmp_path / "out"), "--bootstrap", "200"
    )
    assert got.code == 0, got.err
    total = next(ln for ln in got.out.splitlines() if " total: headline " in ln)
    assert "headline calibrated" in total and "model-only" in total and "human labels" in total
