"""A NUL (``\\u0000``) in an imported file is refused naming the line, on every importer.

PostgreSQL's text columns cannot hold NUL: without the check a conflicts bank, a sources
item or a claims file holding one ended in an 87-101-line ``psycopg.DataError``. The
refusal comes before anything is stored, so it reads the same on SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from study.conflicts.items import sample_banks_path
from tests.limits.conftest import Outcome


def test_nul_in_a_bank_an_item_or_a_claim_is_refused_with_its_line(
    workspace: object, tmp_path: Path, run_main: Callable[..., Outcome]
) -> None:
    first, second = sample_banks_path().read_text(encoding="utf-8").splitlines()[:2]
    bank = json.loads(second)
    bank["core_memories"][0] += "\x00"
    banks = tmp_path / "banks.jsonl"
    banks.write_text(first + "\n" + json.dumps(bank) + "\n", encoding="utf-8")
    line = run_main("conflicts", "import", str(banks)).one_line()
    assert "line 2: contains a NUL character" in line

    items = tmp_path / "items.jsonl"
    good = {"id": "a", "question": "Which?", "choices": ["x", "y"], "answer": "A"}
    items.write_text(
        json.dumps(good) + "\n" + json.dumps({**good, "id": "b", "question": "W\x00?"}) + "\n"
    )
    assert "line 2: contains a NUL character" in run_main("sources", "items", str(items)).one_line()

    claims = tmp_path / "claims.jsonl"
    claims.write_text(json.dumps({"id": "a", "claim": "It is [answer].\x00"}) + "\n")
    line = run_main("sources", "claims-import", str(claims), "--set", "x").one_line()
    assert "line 1: contains a NUL character" in line


def test_conflicts_import_names_more_than_the_first_problem(
    workspace: object, tmp_path: Path, run_main: Callable[..., Outcome]
) -> None:
    banks = tmp_path / "banks.jsonl"
    banks.write_text('not json\n[1]\n{"x": 1}\n', encoding="utf-8")
    line = run_main("conflicts", "import", str(banks)).one_line()
    assert "line 1:" in line and "line 2:" in line and "line 3:" in line
