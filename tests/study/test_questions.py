"""Question import: CSV and JSONL, duplicates, bad rows, all-or-nothing, sample set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import col, select

from storage.errors import InputError
from storage.models import Question
from study.questions import (
    DOMAINS,
    derived_id,
    import_questions,
    import_sample_questions,
    normalise_text,
    read_questions,
    sample_questions_path,
)


def _ids(session) -> list[str]:
    return [q.external_id for q in session.exec(select(Question).order_by(col(Question.id))).all()]


def test_sample_questions_are_complete() -> None:
    rows = read_questions(sample_questions_path())
    assert len(rows) >= 40
    assert len({r.external_id for r in rows}) == len(rows)
    assert len({normalise_text(r.text) for r in rows}) == len(rows)
    assert all(r.domains and set(r.domains) <= set(DOMAINS) for r in rows)
    assert {d for r in rows for d in r.domains} == set(DOMAINS)
    assert all(r.text.rstrip().endswith(("?", ".")) for r in rows)


def test_csv_import_with_question_column(tmp_path: Path, session) -> None:
    path = tmp_path / "q.csv"
    path.write_text(
        "id,question,domains\nA1,Should I rent or buy?,finance\n,Is honesty always best?,"
        "ethics and morality;other\n",
        encoding="utf-8",
    )
    report = import_questions(path, session=session)
    assert report.added == ("A1", derived_id("Is honesty always best?"))
    stored = session.exec(select(Question).where(Question.external_id == "A1")).one()
    assert stored.text == "Should I rent or buy?" and stored.domains == ["finance"]
    assert stored.source == "q.csv"


def test_csv_with_text_column_and_bom(tmp_path: Path, session) -> None:
    path = tmp_path / "q.csv"
    path.write_bytes('\ufeffText\n"Which is better, A or B?"\n'.encode())
    assert len(import_questions(path, session=session).added) == 1


def test_jsonl_import_and_duplicates(tmp_path: Path, session) -> None:
    path = tmp_path / "q.jsonl"
    lines = [
        {"id": "x1", "text": "Should I move cities?"},
        {"id": "x2", "text": "  should i MOVE   cities "},  # same normalised text
        {"id": "x1", "text": "Another question entirely?"},  # same id
        {"text": "Is it fair to split credit equally?"},
    ]
    path.write_text("\n".join(json.dumps(obj) for obj in lines) + "\n\n", encoding="utf-8")
    report = import_questions(path, session=session)
    assert report.added == ("x1", derived_id("Is it fair to split credit equally?"))
    assert [(d.line, d.external_id) for d in report.duplicates] == [(2, "x2"), (3, "x1")]
    assert "same text" in report.duplicates[0].reason
    assert "id already" in report.duplicates[1].reason
    # Importing again: everything is a duplicate of a stored question.
    again = import_questions(path, session=session)
    assert again.added == () and len(again.duplicates) == 4


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "q.jsonl",
            '{"text": "ok?"}\n{"text": "broken"\n{"text": ""}\n[1]\n',
            ["line 2: invalid JSON", "line 3: empty question text", "line 4: expected a JSON"],
        ),
        (
            "q.csv",
            "id,question\n1,fine?\n2,\n3,also fine?,extra\n",
            ["line 3: empty question text", "line 4: more cells"],
        ),
        ("q.jsonl", '{"text": "a?", "domains": ["astrology"]}\n', ["line 1: unknown domain"]),
        ("q.jsonl", '{"text": 5}\n', ["line 1: text must be a string"]),
    ],
)
def test_bad_rows_are_listed_and_nothing_is_imported(
    tmp_path: Path,
    db,
    name: str,
    content: str,
    expected: list[str],
) -> None:
    with db() as session:
        import_questions(
            _write(tmp_path / "ok.jsonl", '{"id": "keep", "text": "Keep?"}\n'), session=session
        )
    path = _write(tmp_path / name, content)
    with pytest.raises(InputError) as info, db() as session:
        import_questions(path, session=session)
    message = str(info.value)
    assert str(path) in message and "nothing imported" in message
    for fragment in expected:
        assert fragment in message
    with db() as session:
        assert _ids(session) == ["keep"]


def test_missing_text_column(tmp_path: Path, session) -> None:
    path = _write(tmp_path / "q.csv", "id,prompt\n1,hello?\n")
    with pytest.raises(InputError, match="'question' or 'text' column"):
        import_questions(path, session=session)


def test_unknown_extension(tmp_path: Path, session) -> None:
    with pytest.raises(InputError, match=r"\.csv, \.tsv or \.jsonl"):
        import_questions(_write(tmp_path / "q.txt", "hello?\n"), session=session)


def test_cli_import_and_list(cli, tmp_path: Path) -> None:
    res = cli("questions", "import", "--sample")
    assert res.exit_code == 0, res.output
    assert "Imported 48" in res.output
    res = cli("questions", "import", "--sample", "--json")
    payload = json.loads(res.output)
    assert payload["added"] == [] and len(payload["duplicates"]) == 48
    listed = cli("questions", "list", "--json")
    items = [json.loads(line) for line in listed.output.splitlines()]
    assert len(items) == 48 and items[0]["id"] == "dl-001"
    # Markup-like text is shown literally in the table.
    _write(tmp_path / "m.jsonl", '{"id": "m", "text": "Is [bold]this[/bold] fair?"}\n')
    assert cli("questions", "import", str(tmp_path / "m.jsonl")).exit_code == 0
    table = cli("questions", "list")
    assert "[bold]this[/bold]" in table.output


def test_sample_import_is_idempotent(session) -> None:
    assert len(import_sample_questions(session=session).added) == 48
    assert import_sample_questions(session=session).added == ()


def _write(path: Path, content: str) -> Path:
    path.write_text(content, encoding="utf-8")
    return path
