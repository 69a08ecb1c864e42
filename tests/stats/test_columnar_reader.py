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


def test_text_columns_are_categorical_and_factorise_like_the_reference(tmp_path: Path) -> None:
    # The fast reader dictionary-encodes the text columns; codes and names must still come
    # out in sorted text order ("b10" before "b9"; categories arrive in file order), and
    # cells the workbench guarded (a leading "'") must read back unguarded.
    path = tmp_path / "drift.csv"
    rows = ["model,question_id,condition,condition_class,variant,sample,dtw"]
    for k, q in enumerate(["q9", "q10", "'=q1", "q2"]):
        for cond, klass in (("zeta", "noise"), ("alpha", " attribute"), ("mid", "noise")):
            for sample in (10, 9):
                model = "sim/b9" if k % 2 else "sim/b10"
                rows.append(f"{model},{q},{cond},{klass},{cond}/1,{sample},{0.1 * k + sample}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    fast, reference = read_stats_csv(path), read_stats_csv_pandas(path)
    assert isinstance(fast["question_id"].dtype, pd.CategoricalDtype)
    assert "=q1" in set(fast["question_id"]) and "=q1" in set(reference["question_id"])
    _same_input(fast, reference)
    inp = stats_input(fast)
    assert inp.model_names == ("sim/b10", "sim/b9")
    assert inp.sample_names == ("9", "10")  # numbers sort as numbers, not as text
    got = analyze_table(inp, bootstrap=200, seed=5).to_dict()
    want = analyze_table(stats_input(reference), bootstrap=200, seed=5).to_dict()
    assert got == want
