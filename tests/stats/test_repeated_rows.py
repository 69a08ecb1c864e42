"""``driftlens stats`` names repeated rows (file and lines) and refuses them, or keeps the first."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from storage.errors import InputError
from study.reasoning.stats_table import read_stats_csv, repeated_rows, stats_input
from tests.cli_invoke import invoke_cli
from tests.stats.sim import simulate_table


@pytest.fixture
def table() -> pd.DataFrame:
    df, _ = simulate_table(
        np.random.default_rng(3), n_questions=20, attributes={"rich": 0.5}, n_noise=2, samples=2
    )
    return df


def _run(*args: str) -> tuple[int, str, str]:
    res = invoke_cli(["stats", *args])
    return res.exit_code, res.stdout, res.stderr


def _with_repeats(df: pd.DataFrame) -> pd.DataFrame:
    # rows 1 and 4 copied to the end: file lines 3 and 6, repeated on the last two lines
    return pd.concat([df, df.iloc[[1, 4]]], ignore_index=True)


def test_repeated_rows_are_named_by_file_and_line_and_refused(
    table: pd.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    _with_repeats(table).to_csv(path, index=False)
    n = len(table)
    code, out, err = _run(str(path), "-B", "200", "--seed", "1")
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err.replace("\n", "")
    assert f"line {n + 2} repeats line 3" in err and f"line {n + 3} repeats line 6" in err
    assert "--keep-first" in err


def test_keep_first_gives_the_numbers_of_the_table_without_repeats(
    table: pd.DataFrame, tmp_path: Path
) -> None:
    clean, dup = tmp_path / "clean.csv", tmp_path / "dup.csv"
    table.to_csv(clean, index=False)
    _with_repeats(table).to_csv(dup, index=False)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    code, _, err = _run(str(clean), "-B", "200", "--seed", "1", "--json", str(a))
    assert code == 0, err
    code, out, err = _run(str(dup), "-B", "200", "--seed", "1", "--json", str(b), "--keep-first")
    assert code == 0, err
    assert "left out 2 repeated row(s)" in out
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    assert right["meta"]["flags"][-1] == "2 repeated row(s) left out (--keep-first)"
    right["meta"]["flags"].pop()
    assert left == right


def test_rows_that_differ_in_variant_are_not_repeats(table: pd.DataFrame, tmp_path: Path) -> None:
    # two stimuli of one condition with the same numbers: only the variant tells them apart
    doubled = pd.concat(
        [table.assign(variant="attribute/rich/1"), table.assign(variant="attribute/rich/2")],
        ignore_index=True,
    )
    path = tmp_path / "v.csv"
    doubled.to_csv(path, index=False)
    df = read_stats_csv(path)
    assert repeated_rows(df) == []
    inp = stats_input(df, source=path)
    assert inp.metrics == ("dtw", "sri")  # variant is text, not a metric
    without = read_stats_csv(path).drop(columns="variant")
    with pytest.raises(InputError, match=rf"v\.csv: {len(table)} row\(s\) repeat an earlier"):
        stats_input(without, source=path)


def test_a_table_without_variant_still_reads(table: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "old.csv"
    table.to_csv(path, index=False)
    code, _, err = _run(str(path), "-B", "200", "--seed", "1")
    assert code == 0, err
