"""``driftlens judges calibration TABLE.csv``: the numbers of the core, the triage order,
and bad tables named by file and line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import Result

from storage.errors import DriftLensError


def _table(tmp_path: Path) -> Path:
    human = [0, 1, 2, 3, 4, 2, 1, 0, 3, 4, 2, 2]
    judge = [0, 1, 2, 4, 4, 0, 1, 0, 3, 3, 2, 2]
    df = pd.DataFrame({"item": [f"a{i}" for i in range(12)], "judge": judge, "human": human})
    path = tmp_path / "labels.csv"
    df.to_csv(path, index=False)
    return path


def test_calibration_prints_kappa_and_triage(cli: Callable[..., Result], tmp_path: Path) -> None:
    path = _table(tmp_path)
    out = tmp_path / "triage.csv"
    res = cli(
        "judges", "calibration", str(path), "--levels", "0,1,2,3,4", "--ordinal",
        "--bootstrap", "200", "--triage", str(out),
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    df = pd.read_csv(path)
    kappa = cohen_kappa_score(df["human"], df["judge"], labels=[0, 1, 2, 3, 4])
    assert f"Cohen's kappa {kappa:.3f}" in res.output
    assert "weighted kappa" in res.output and "TPR" in res.output
    triage = pd.read_csv(out)
    assert list(triage["item"][:3]) == ["a5", "a3", "a9"]  # gap 2 first, then gaps of 1
    assert len(triage) == 12


def test_a_label_off_the_scale_names_file_and_line(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    path = _table(tmp_path)
    text = path.read_text().replace("a4,4,4", "a4,9,4")
    path.write_text(text)
    res = cli("judges", "calibration", str(path), "--levels", "0,1,2,3,4", "--ordinal")
    assert isinstance(res.exception, DriftLensError)
    assert "line 6" in str(res.exception) and "'9'" in str(res.exception)


@pytest.mark.parametrize("column", ["judge", "human"])
def test_a_missing_column_is_one_sentence(
    cli: Callable[..., Result], tmp_path: Path, column: str
) -> None:
    path = _table(tmp_path)
    res = cli("judges", "calibration", str(path), "--levels", "0,1", f"--{column}-column", "x")
    assert isinstance(res.exception, DriftLensError) and "no column 'x'" in str(res.exception)


def test_calibration_table_of_an_uncovered_study_is_one_sentence(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    bad = cli("judges", "calibration-table", "question_checks", "--out", str(tmp_path / "t.csv"))
    assert bad.exit_code != 0 and isinstance(bad.exception, DriftLensError)
    assert "has no judge verdict" in str(bad.exception) and "conflict_rubric" in str(bad.exception)
    assert not (tmp_path / "t.csv").exists()
