"""The toy instrument's items: yes/no questions in a JSONL file, validated line by line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from storage.errors import InputError

SAMPLE = Path(__file__).resolve().parent / "data" / "sample_items.jsonl"


@dataclass(frozen=True)
class CoinItem:
    """One yes/no question."""

    id: str
    question: str


def read_items(path: Path = SAMPLE) -> list[CoinItem]:
    """Read items from JSONL (one object with ``id`` and ``question`` a line).

    Raises:
        InputError: a line is not such an object, or an id repeats (file and line named).
    """
    out: list[CoinItem] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            item = CoinItem(id=str(row["id"]), question=str(row["question"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            raise InputError(f"{path.name}, line {n}: expected {{'id', 'question'}}.") from None
        if item.id in seen:
            raise InputError(f"{path.name}, line {n}: item id {item.id!r} repeats.")
        seen.add(item.id)
        out.append(item)
    return out
