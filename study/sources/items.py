"""Multiple-choice items for the source-reliance instrument: import, validate, export.

An item is one question with 2–10 options, the correct option's letter, an optional dataset
name (``commonsense``, ``arithmetic``, ``csqa``, ``gsm8k``...) and optional gold reasoning.
Files the user brings:

* our JSONL / CSV: ``{"id", "question", "choices": [...], "answer": "B", "dataset"?,
  "reasoning"?}`` (CSV: ``choices`` as a JSON list, or columns ``A``, ``B``, ...);
* CommonsenseQA's JSONL shape: ``{"id", "question": {"stem", "choices": [{"label", "text"}]},
  "answerKey"}`` (the original release) or ``{"id", "question", "choices": {"label": [...],
  "text": [...]}, "answerKey"}`` (the Hugging Face rows);
* GSM8K-MC's shape: ``{"Question", "A", "B", "C", "D", "Answer"}`` (column names in any case).

Every problem is one :class:`~storage.errors.InputError` sentence naming the file and line.
The shipped items (``study/sources/data/sample_mcq.jsonl``) are written by us: 60 five-way
commonsense questions and 40 four-way arithmetic word problems.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from storage.errors import InputError
from storage.safe_text import holds_nul

LETTERS = "ABCDEFGHIJ"
FORMATS: tuple[str, ...] = ("auto", "jsonl", "csv", "csqa", "gsm8k-mc")


class MCQItem(BaseModel):
    """One multiple-choice question (serialisable, versioned)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    choices: tuple[str, ...]
    answer: str
    dataset: str = "default"
    reasoning: str | None = None

    @field_validator("question", "id")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("must not be empty")
        return v

    @field_validator("choices")
    @classmethod
    def _choices(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        v = tuple(str(c).strip() for c in v)
        if not 2 <= len(v) <= len(LETTERS):
            raise ValueError(f"needs 2 to {len(LETTERS)} choices, got {len(v)}")
        if any(not c for c in v):
            raise ValueError("a choice is empty")
        if len(set(v)) != len(v):
            raise ValueError("two choices have the same text")
        return v

    @model_validator(mode="after")
    def _answer_is_a_letter(self) -> MCQItem:
        if self.answer not in self.letters:
            raise ValueError(
                f"answer {self.answer!r} is not one of the letters {', '.join(self.letters)}"
            )
        return self

    @property
    def letters(self) -> tuple[str, ...]:
        """The option letters (``A``, ``B``, ...)."""
        return tuple(LETTERS[: len(self.choices)])

    @property
    def answer_index(self) -> int:
        """Index of the correct option."""
        return self.letters.index(self.answer)

    def choice_text(self, letter: str) -> str:
        """The text of the option ``letter``."""
        return self.choices[self.letters.index(letter)]


def _err(source: str, line: int, message: str) -> InputError:
    return InputError(f"{source}, line {line}: {message}")


def _item(record: Mapping[str, Any], source: str, line: int, dataset: str | None) -> MCQItem:
    if holds_nul(dict(record)):
        raise _err(source, line, "contains a NUL character (\\u0000)")
    data = dict(record)
    if dataset is not None and not data.get("dataset"):
        data["dataset"] = dataset
    answer = data.get("answer")
    if isinstance(answer, str):
        data["answer"] = answer.strip().upper()
    try:
        return MCQItem.model_validate(data)
    except ValueError as exc:
        first = exc.errors()[0] if hasattr(exc, "errors") else None  # pydantic detail
        if first is not None:
            where = ".".join(str(p) for p in first.get("loc", ()))
            msg = str(first.get("msg", exc)).removeprefix("Value error, ")
            raise _err(source, line, f"{where}: {msg}" if where else msg) from None
        raise _err(source, line, str(exc)) from None


def _from_ours(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: obj[k] for k in ("id", "question", "answer", "dataset", "reasoning") if k in obj}
    choices = obj.get("choices")
    if isinstance(choices, str):
        try:
            choices = json.loads(choices)
        except json.JSONDecodeError:
            choices = None
    if choices is None:
        # CSV with one column per letter
        choices = [obj[k] for k in LETTERS if obj.get(k) not in (None, "")]
    out["choices"] = choices
    if "id" in out:
        out["id"] = _id_text(out["id"])
    return out


def _id_text(value: Any) -> str:
    """An id as text; a missing one (JSON ``null``) is empty, refused by the model.

    ``str(None)`` stored ``"None"`` as the id of every item without one.
    """
    return "" if value is None else str(value)


def _from_csqa(obj: Mapping[str, Any]) -> dict[str, Any]:
    q = obj.get("question")
    if isinstance(q, Mapping):  # the original release: question.stem / question.choices
        stem, choices = q.get("stem"), q.get("choices") or []
        pairs = [(c.get("label"), c.get("text")) for c in choices]
    else:  # the Hugging Face rows: choices.label / choices.text
        stem = q
        ch = obj.get("choices") or {}
        pairs = list(zip(ch.get("label") or [], ch.get("text") or [], strict=False))
    pairs.sort(key=lambda p: str(p[0]))
    return {
        "id": _id_text(obj.get("id")),
        "question": stem,
        "choices": [t for _, t in pairs],
        "answer": obj.get("answerKey"),
        "dataset": "csqa",
    }


def _from_gsm8k_mc(obj: Mapping[str, Any], n: int) -> dict[str, Any]:
    low = {str(k).lower(): v for k, v in obj.items()}
    return {
        "id": str(low.get("id") or f"gsm8k-mc-{n}"),
        "question": low.get("question"),
        "choices": [str(low[k]) for k in "abcd" if low.get(k) not in (None, "")],
        "answer": low.get("answer"),
        "dataset": "gsm8k",
    }


def _records(text: str, source: str, kind: str) -> Iterable[tuple[int, Mapping[str, Any]]]:
    if kind == "csv":
        reader = csv.DictReader(io.StringIO(text))
        for i, row in enumerate(reader, start=2):
            yield i, row
        return
    for i, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _err(source, i, f"not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise _err(source, i, "expected one JSON object per line")
        yield i, obj


def parse_items(
    text: str,
    *,
    source: str,
    fmt: str = "auto",
    dataset: str | None = None,
    notes: list[str] | None = None,
) -> list[MCQItem]:
    """Parse items from file contents.

    Args:
        text: The file's text.
        source: How errors name the file.
        fmt: One of :data:`FORMATS` (``auto``: by the first record's keys; CSV when the
            source ends in ``.csv``).
        dataset: Dataset name for items that carry none.
        notes: When given, one sentence is appended per item that repeats an earlier
            item's question text with other options (kept: the question block tells
            them apart, but the file may hold a copy-paste slip).

    Returns:
        The items, in file order.

    Raises:
        InputError: an unknown format, an invalid record, a duplicate id, or an item
            repeating an earlier one's question and options (naming the line).
    """
    if fmt not in FORMATS:
        raise InputError(f"Unknown item format {fmt!r}; use one of {', '.join(FORMATS)}.")
    kind = "csv" if fmt == "csv" or (fmt == "auto" and source.lower().endswith(".csv")) else "jsonl"
    items: list[MCQItem] = []
    seen: dict[str, int] = {}
    blocks: dict[tuple[str, tuple[str, ...]], int] = {}
    texts: dict[str, int] = {}
    detected = fmt
    for n, (line, obj) in enumerate(_records(text, source, kind)):
        if detected == "auto":
            keys = {str(k).lower() for k in obj}
            if "answerkey" in keys:
                detected = "csqa"
            elif {"a", "b", "answer", "question"} <= keys and "choices" not in keys:
                detected = "gsm8k-mc" if kind == "jsonl" else "csv"
            else:
                detected = "jsonl"
        if detected == "csqa":
            rec = _from_csqa(obj)
        elif detected == "gsm8k-mc":
            rec = _from_gsm8k_mc(obj, n)
        else:
            rec = _from_ours(obj)
        item = _item(rec, source, line, dataset)
        if item.id in seen:
            raise _err(source, line, f"id {item.id!r} already used on line {seen[item.id]}")
        block = (item.question, tuple(item.choices))
        if block in blocks:
            # a model (and the simulator) sees only the question and its options: two items
            # that agree on both cannot be told apart, and their answers would be pooled
            raise _err(
                source,
                line,
                f"item {item.id!r} repeats the question and options of line {blocks[block]}; "
                "a model cannot tell the two apart (reword one or drop it)",
            )
        if notes is not None and item.question in texts:
            notes.append(
                f"{source}, line {line}: item {item.id!r} repeats the question text of line "
                f"{texts[item.question]} with other options (kept: told apart by its options)"
            )
        seen[item.id] = line
        blocks[block] = line
        texts.setdefault(item.question, line)
        items.append(item)
    if not items:
        raise InputError(f"{source} holds no items.")
    return items


def read_items(
    path: Path,
    *,
    fmt: str = "auto",
    dataset: str | None = None,
    notes: list[str] | None = None,
) -> list[MCQItem]:
    """Read items from a JSONL or CSV file (see :func:`parse_items`, ``notes`` too).

    Raises:
        InputError: the file is missing, unreadable or invalid.
    """
    if not path.exists():
        raise InputError(f"File not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text.") from None
    return parse_items(text, source=str(path), fmt=fmt, dataset=dataset, notes=notes)


def shipped_items() -> list[MCQItem]:
    """The items shipped with the workbench (written by us)."""
    text = resources.files("study.sources").joinpath("data/sample_mcq.jsonl").read_text("utf-8")
    return parse_items(text, source="sample_mcq.jsonl", fmt="jsonl")


def items_to_jsonl(items: Sequence[MCQItem]) -> str:
    """Our JSONL form (what :func:`parse_items` reads back)."""
    return "".join(
        json.dumps(it.model_dump(exclude={"version"}, exclude_none=True), ensure_ascii=False) + "\n"
        for it in items
    )


def answer_balance(items: Sequence[MCQItem]) -> dict[str, dict[str, float]]:
    """Share of correct answers at each letter, per dataset (position bias check)."""
    out: dict[str, dict[str, float]] = {}
    by: dict[str, Counter[str]] = {}
    for it in items:
        by.setdefault(it.dataset, Counter())[it.answer] += 1
    for ds, counts in sorted(by.items()):
        total = sum(counts.values())
        out[ds] = {k: counts[k] / total for k in sorted(counts)}
    return out
