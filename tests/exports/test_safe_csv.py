"""Formula-safe CSV files (study/safe_csv.py) and the report folder written as a whole."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlmodel import select

from storage.errors import InputError
from storage.models import Question
from storage.settings import default_db_url, resolve_settings
from storage.workspace import open_workspace_session
from study.catalog import catalog_to_csv
from study.catalog.document import CatalogEntry, document_from_entries, parse_catalog_csv
from study.reasoning.analysis import analyze_run
from study.reasoning.stats_table import read_stats_csv
from study.report.folder import staged_report_folder
from study.safe_csv import (
    FORMULA_START,
    csv_text,
    guard_cell,
    unguard_cell,
    write_frame_csv,
)
from tests.analysis._sim_workspace import LABELER, RUN, build_sim_workspace
from tests.cli_invoke import invoke_cli

HOSTILE_IDS = ('=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tq")


def _cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


def test_guard_neutralises_formula_cells_and_keeps_numbers() -> None:
    assert guard_cell('=HYPERLINK("http://x","y")') == '\'=HYPERLINK("http://x","y")'
    assert guard_cell("@SUM(A1)") == "'@SUM(A1)"
    assert guard_cell("\tq") == "'\tq"
    assert guard_cell("\rq") == "'\rq"
    for number in ("-0.5", "+3", "1e-4", "-.25", "12"):
        assert guard_cell(number) == number
    assert guard_cell(-0.5) == -0.5
    assert guard_cell("plain text") == "plain text"
    assert guard_cell("'=x") == "''=x"  # already quoted: one more quote, reversibly


@given(st.text())
def test_guard_is_reversible_and_never_leaves_a_formula(text: str) -> None:
    guarded = guard_cell(text)
    assert unguard_cell(guarded) == text
    assert not (str(guarded).startswith(FORMULA_START) and guarded != text)
    if guarded.startswith(FORMULA_START):  # only plain numbers may start so
        float(guarded)


def test_csv_text_and_frame_writer_guard_every_text_cell(tmp_path: Path) -> None:
    text = csv_text(["=h", "n"], [["=1+1", 1.5], ["-x", -2]])
    assert text.splitlines() == ["'=h,n", "'=1+1,1.5", "'-x,-2"]
    frame = pd.DataFrame({"question_id": list(HOSTILE_IDS), "dtw": [-0.5, 0.1, 2, 3, 4]})
    path = write_frame_csv(frame, tmp_path / "f.csv")
    for cell in _cells(path):
        assert not cell.startswith(FORMULA_START) or cell in ("-0.5",), cell


def test_catalog_csv_export_is_guarded_and_imports_back(tmp_path: Path) -> None:
    doc = document_from_entries(
        [
            CatalogEntry("noise/filler/1", "noise", "filler", "=cmd|' /C calc'!A0"),
            CatalogEntry("attribute/age/1", "attribute", "age", "- I am 70."),
        ],
        name="hostile",
    )
    text = catalog_to_csv(doc)
    assert all(not c.startswith(("=", "-")) for row in csv.reader(text.splitlines()) for c in row)
    again = parse_catalog_csv(text, source="x.csv", name="hostile")
    assert [e.text for e in again.entries()] == [e.text for e in doc.entries()]


def test_hostile_question_ids_through_analysis_stay_inert_and_stats_agree(
    tmp_path: Path,
) -> None:
    settings = resolve_settings(workspace=tmp_path, db_url=default_db_url(tmp_path))
    with open_workspace_session(settings) as session:
        build_sim_workspace(session, n_questions=8)
        questions = session.exec(select(Question).order_by(Question.external_id)).all()
        for q, new_id in zip(questions, HOSTILE_IDS, strict=False):
            q.external_id = new_id
            session.add(q)
    out = tmp_path / "report"
    with open_workspace_session(settings) as session:
        analyze_run(RUN, LABELER, session=session, out_dir=out, bootstrap=200, seed=3)
    written = [out / "drift.csv", out / "pairs.csv", *sorted((out / "tables").glob("*.csv"))]
    for path in written:
        for cell in _cells(path):
            if cell.startswith(FORMULA_START):
                float(cell)  # a number, never a formula
    # Read back exactly: the ids are the stored ones again.
    ids = set(read_stats_csv(out / "drift.csv")["question_id"])
    assert set(HOSTILE_IDS) <= ids
    target = tmp_path / "x.json"
    res = invoke_cli(
        ["stats", str(out / "drift.csv"), "--json", str(target), "--bootstrap", "200",
         "--seed", "3"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(target.read_text()) == json.loads((out / "stats.json").read_text())


def test_report_folder_is_replaced_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "report"
    with staged_report_folder(target) as work:
        (work / "stats.json").write_text("{}", encoding="utf-8")
        (work / "old-only.txt").write_text("x", encoding="utf-8")
    assert sorted(p.name for p in target.iterdir()) == ["old-only.txt", "stats.json"]
    with pytest.raises(RuntimeError), staged_report_folder(target) as work:
        (work / "stats.json").write_text('{"new": 1}', encoding="utf-8")
        raise RuntimeError("killed half-way")
    # The failed write left the previous complete folder, and no stray sibling.
    assert (target / "stats.json").read_text(encoding="utf-8") == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["report"]
    with staged_report_folder(target) as work:
        (work / "stats.json").write_text('{"new": 2}', encoding="utf-8")
    assert sorted(p.name for p in target.iterdir()) == ["stats.json"]  # no stale file


def test_a_folder_with_other_files_is_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(InputError, match="holds other files"), staged_report_folder(tmp_path):
        pass
    assert (tmp_path / "notes.txt").exists()


_CELLS = ["=1+1", "'=1+1", "''=x", "-0.5", "'-0.5", "'plain", "plain", "@sum", "'@sum", "+3", ""]


@given(
    st.lists(
        st.one_of(st.sampled_from(_CELLS), st.text(max_size=6), st.none()), min_size=1, max_size=30
    )
)
def test_unguard_frame_equals_the_cell_by_cell_reference(cells: list[str | None]) -> None:
    # The vectorised frame reader changes only guarded cells; the reference is the
    # cell-by-cell unguard_cell, on object, Arrow string and categorical columns alike.
    from study.safe_csv import unguard_cell, unguard_frame

    for dtype in (object, "string[pyarrow]", "category"):
        frame = pd.DataFrame({"text": pd.Series(cells, dtype=dtype), "n": range(len(cells))})
        expected = [unguard_cell(c) if isinstance(c, str) else c for c in cells]
        got = unguard_frame(frame.copy())
        if dtype == "category":  # categories may merge ("'x" and "x"); still categorical
            assert isinstance(got["text"].dtype, pd.CategoricalDtype)
        else:
            assert got["text"].dtype == frame["text"].dtype
        assert [None if pd.isna(v) else v for v in got["text"]] == [
            None if v is None else v for v in expected
        ]
        assert list(got["n"]) == list(range(len(cells)))


def test_unguard_frame_leaves_columns_without_strings_alone() -> None:
    from study.safe_csv import unguard_frame

    frame = pd.DataFrame({"empty": pd.Series([None, None], dtype=object), "x": [1.0, 2.0]})
    got = unguard_frame(frame.copy())
    assert got["empty"].isna().all() and list(got["x"]) == [1.0, 2.0]
