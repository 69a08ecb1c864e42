"""The columnar (pyarrow) drift-table reader gives what pandas' reader gives.

``read_stats_csv`` reads with pyarrow and falls back to ``read_stats_csv_pandas`` (the
reference) for anything the two could type differently. Same table in, same validated
input, same statistics and the same error sentences out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from driftlens_core.analysis import analyze_table
from storage.errors import InputError
from study.reasoning import stats_table
from study.reasoning.stats_table import read_stats_csv, read_stats_csv_pandas, stats_input
from tests.stats.sim import simulate_table


def _table(tmp_path: Path) -> Path:
    df, _ = simulate_table(
        np.random.default_rng(3),
        n_questions=40,
        attributes={"age": 0.4, "job": 0.0},
        life_events={"loss": 0.8},
        rows_per_cell=2,
        samples=2,
    )
    df["model"] = np.where(np.arange(len(df)) % 2 == 0, "sim/a", "sim/b")
    df["question_id"] = ["007" if q == df["question_id"].iloc[0] else q for q in df["question_id"]]
    path = tmp_path / "drift.csv"
    df.to_csv(path, index=False)
    return path


def _same_input(a: pd.DataFrame, b: pd.DataFrame) -> None:
    ia, ib = stats_input(a), stats_input(b)
    for name in ("question", "condition", "model", "values", "sample"):
        np.testing.assert_array_equal(getattr(ia, name), getattr(ib, name))
    for name in ("metrics", "condition_names", "condition_classes", "model_names", "sample_names"):
        assert getattr(ia, name) == getattr(ib, name)


def test_columnar_reader_gives_the_same_statistics(tmp_path: Path) -> None:
    path = _table(tmp_path)
    assert stats_table._read_columnar(path) is not None  # the fast path was taken
    fast, reference = read_stats_csv(path), read_stats_csv_pandas(path)
    assert list(fast.columns) == list(reference.columns)
    assert "007" in set(fast["question_id"])  # ids stay text
    _same_input(fast, reference)
    got = analyze_table(stats_input(fast), bootstrap=200, seed=5).to_dict()
    want = analyze_table(stats_input(reference), bootstrap=200, seed=5).to_dict()
    assert got == want


@pytest.mark.parametrize(
    "body",
    [
        # missing values of every spelling pandas knows
        "question_id,condition,condition_class,dtw\nq1,a,noise,NA\nq2,a,noise,None\n"
        "q3,b,attribute,<NA>\nq4,b,attribute,0.5\n",
        # text in a metric column
        "question_id,condition,condition_class,dtw\nq1,a,noise,0.1\nq2,a,noise,abc\n",
        # numbers with spaces, quoted fields, an empty id
        'question_id,condition,condition_class,dtw\n"q,1",a,noise, 1.5\n,a,noise,2\n',
        # a header only
        "question_id,condition,condition_class,dtw\n",
        # repeated header names
        "question_id,condition,condition_class,dtw,dtw\nq1,a,noise,1,2\n",
        # dates and booleans where numbers belong
        "question_id,condition,condition_class,dtw,flag\nq1,a,noise,2026-01-01,True\n",
        # ragged rows
        "question_id,condition,condition_class,dtw\nq1,a,noise,1,9\n",
    ],
)
def test_odd_files_read_and_fail_the_same_way(tmp_path: Path, body: str) -> None:
    path = tmp_path / "odd.csv"
    path.write_text(body, encoding="utf-8")

    def outcome(reader: object) -> object:
        try:
            df = reader(path)  # type: ignore[operator]
        except InputError as exc:
            return ("read error", str(exc))
        try:
            inp = stats_input(df)
        except InputError as exc:
            return ("input error", str(exc))
        return ("ok", inp.condition_names, inp.values.tolist())

    assert outcome(read_stats_csv) == outcome(read_stats_csv_pandas)


def test_empty_file_message_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="is empty"):
        read_stats_csv(path)
