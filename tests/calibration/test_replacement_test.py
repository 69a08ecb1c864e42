"""The alternative annotator test beside ``judges calibration-table`` on a pulled study."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.calibration.conftest import Slice
from tests.cli_runner import CliOutcome, cli_runner


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run ``driftlens ARGS`` as the console script does."""
    return cli_runner(capsys, monkeypatch)


def test_a_judge_off_the_truth_may_not_replace_exact_annotators(
    pulled_slice: Callable[..., Slice], run_cli: Callable[..., CliOutcome], tmp_path: Path
) -> None:
    # annotators without slips give the truth; the noisy lenient judge loses item by item
    pulled_slice(limit=40, flip=0.0)
    got = run_cli(
        "judges", "calibration-table", "conflict_rubric", "--out", str(tmp_path / "t.csv")
    )
    assert got.code == 0, got.err
    line = next(ln for ln in got.out.splitlines() if ln.startswith("Alternative annotator test"))
    assert "may not replace" in line and "winning rate 0.00" in line


def test_the_test_reads_every_annotator_vote(pulled_slice: Callable[..., Slice], db: Any) -> None:
    from study.judge_robustness.human_table import calibration_table

    pulled_slice(limit=40, flip=0.2)
    with db() as session:
        got = calibration_table("conflict_rubric", session=session)
    res = got.alt_test
    assert res is not None and res.n_items >= 50  # 40 answers x D1-D5 (D3 n/a left out)
    assert len(res.annotators) == 2 and all(a.n_items == res.n_items for a in res.annotators)
    assert res.verdict in ("may replace", "may not replace")
