"""Question import (CSV/JSONL) and listing (SPEC §2, first step of curation).

Imports are all-or-nothing: the whole file is read and checked first; any bad row stops
the import with every problem listed by line number, and the database is not touched.
Duplicates (same id, or same normalised text, within the file or against stored
questions) are not errors: they are skipped and reported.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from storage.errors import InputError
from storage.models import Question
from storage.repo.questions import benchmark_only
from storage.yaml_input import read_text_file

#: The domains of SPEC §2 (the LLM filter assigns the same set).
DOMAINS: tuple[str, ...] = (
    "career",
    "education",
    "health",
    "finance",
    "relationship",
    "ethics and morality",
    "personal decision",
    "other",
)
SAMPLE_QUESTIONS_FILE = "sample_questions.jsonl"
SAMPLE_SOURCE = "driftlens-sample"
#: How many problems an error message lists before summarising the rest.
_MAX_LISTED = 5


@dataclass(frozen=True)
class QuestionRow:
    """One question read from a file (``line`` is 1-based in that file)."""

    external_id: str
    text: str
    domains: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class Duplicate:
    """A row skipped because its id or normalised text is already known."""

    line: int
    external_id: str
    reason: str


@dataclass(frozen=True)
class QuestionImportReport:
    """What ``import_questions`` did."""

    source: str
    added: tuple[str, ...]
    duplicates: tuple[Duplicate, ...] = field(default_factory=tuple)


def normalise_text(text: str) -> str:
    """Normalise a question for duplicate detection.

    Unicode NFKC, case-folded, whitespace collapsed, trailing ``?``/``.``/``!`` ignored:
    two questions differing only in these are the same question.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", folded).strip().rstrip("?.! ")


def derived_id(text: str) -> str:
    """A stable id for a question without one (hash of its normalised text)."""
    return "q-" + hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:12]


def sample_questions_path() -> Path:
    """Path of the bundled sample questions (``study/data/sample_questions.jsonl``)."""
    return Path(str(resources.files("study.data").joinpath(SAMPLE_QUESTIONS_FILE)))


# ------------------------------------------------------------------------- reading


def _parse_domains(value: Any) -> tuple[tuple[str, ...], str | None]:
    """Return ``(domains, problem)``; CSV cells separate domains with ``;`` or ``|``."""
    if value is None or value == "":
        return (), None
    if isinstance(value, str):
        items = [v.strip() for v in re.split(r"[;|]", value)]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        return (), "domains must be a list of strings"
    domains = tuple(dict.fromkeys(v.lower() for v in items if v))
    unknown = [d for d in domains if d not in DOMAINS]
    if unknown:
        return (), f"unknown domain {unknown[0]!r} (expected one of: {', '.join(DOMAINS)})"
    return domains, None


def _row(
    raw_id: Any, raw_text: Any, raw_domains: Any, line: int
) -> tuple[QuestionRow | None, str | None]:
    if raw_text is not None and not isinstance(raw_text, str):
        return None, f"line {line}: text must be a string"
    text = (raw_text or "").strip()
    if not text:
        return None, f"line {line}: empty question text"
    if isinstance(raw_id, bool) or (raw_id is not None and not isinstance(raw_id, str | int)):
        return None, f"line {line}: id must be a string or a number"
    ext = str(raw_id).strip() if raw_id not in (None, "") else ""
    if "\x00" in text or "\x00" in ext:
        # PostgreSQL cannot store NUL; a question holding one is a broken file, not data.
        return None, f"line {line}: contains a NUL character (\\x00)"
    domains, problem = _parse_domains(raw_domains)
    if problem:
        return None, f"line {line}: {problem}"
    return QuestionRow(ext or derived_id(text), text, domains, line), None


def read_questions(path: Path) -> list[QuestionRow]:
    """Read every question of a CSV or JSONL file, checking all rows first.

    CSV: a ``question`` or ``text`` column, optional ``id`` and ``domains`` (``a;b``).
    JSONL: one object per line with ``text`` (or ``question``), optional ``id``, ``domains``.

    Raises:
        InputError: Unknown format, unreadable file or any bad row (all listed by line).
    """
    suffix = path.suffix.lower()
    content = read_text_file(path, what="question file")
    if suffix in (".jsonl", ".ndjson"):
        rows, problems = _read_jsonl(content)
    elif suffix in (".csv", ".tsv"):
        rows, problems = _read_csv(content, path, delimiter="\t" if suffix == ".tsv" else ",")
    else:
        raise InputError(f"{path}: question files must be .csv, .tsv or .jsonl.")
    if problems:
        listed = "; ".join(problems[:_MAX_LISTED])
        more = f"; and {len(problems) - _MAX_LISTED} more" if len(problems) > _MAX_LISTED else ""
        raise InputError(f"{path}: {len(problems)} bad row(s), nothing imported: {listed}{more}.")
    if not rows:
        raise InputError(f"{path}: no questions in the file.")
    return rows


def _read_jsonl(content: str) -> tuple[list[QuestionRow], list[str]]:
    rows: list[QuestionRow] = []
    problems: list[str] = []
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: invalid JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"line {number}: expected a JSON object")
            continue
        text = obj.get("text", obj.get("question"))
        row, problem = _row(obj.get("id"), text, obj.get("domains"), number)
        if problem:
            problems.append(problem)
        elif row:
            rows.append(row)
    return rows, problems


def _read_csv(content: str, path: Path, *, delimiter: str) -> tuple[list[QuestionRow], list[str]]:
    reader = csv.DictReader(io.StringIO(content, newline=""), delimiter=delimiter)
    fields = [f.strip().lower() for f in (reader.fieldnames or [])]
    reader.fieldnames = fields
    text_col = "question" if "question" in fields else "text" if "text" in fields else None
    if text_col is None:
        raise InputError(f"{path} line 1: needs a 'question' or 'text' column.")
    rows: list[QuestionRow] = []
    problems: list[str] = []
    line = 1
    try:
        # A record's line is where it starts: a quoted cell may span several lines, and
        # reader.line_num is where the record ends.
        while True:
            line = reader.line_num + 1
            record = next(reader, None)
            if record is None:
                break
            if None in record:
                problems.append(f"line {line}: more cells than header columns")
                continue
            if all((v or "").strip() == "" for v in record.values()):
                continue
            row, problem = _row(record.get("id"), record.get(text_col), record.get("domains"), line)
            if problem:
                problems.append(problem)
            elif row:
                rows.append(row)
    except csv.Error as exc:
        problems.append(f"line {line}: {exc}")
    return rows, problems


# ------------------------------------------------------------------------- storing


def import_questions(
    path: Path, *, session: Session, source: str | None = None
) -> QuestionImportReport:
    """Import a question file; skip and report duplicates; all-or-nothing on bad rows.

    Args:
        path: CSV/TSV/JSONL file.
        session: Open session; rows are added and flushed, the caller commits.
        source: Stored in ``Question.source`` (default: the file name).

    Raises:
        InputError: The file is malformed (nothing is added).
    """
    rows = read_questions(path)
    return store_questions(rows, session=session, source=source or path.name)


def store_questions(
    rows: Sequence[QuestionRow], *, session: Session, source: str
) -> QuestionImportReport:
    """Add rows that are neither stored nor repeated in ``rows``; report the others."""
    known_ids: dict[str, str] = {}
    known_texts: dict[str, str] = {}
    for ext, text in session.exec(select(Question.external_id, Question.text)).all():
        known_ids[ext] = "stored"
        known_texts.setdefault(normalise_text(text), ext)
    added: list[str] = []
    dups: list[Duplicate] = []
    for row in rows:
        norm = normalise_text(row.text)
        if row.external_id in known_ids:
            where = known_ids[row.external_id]
            dups.append(Duplicate(row.line, row.external_id, f"id already {where}"))
            continue
        if norm in known_texts:
            dups.append(Duplicate(row.line, row.external_id, f"same text as {known_texts[norm]!r}"))
            continue
        session.add(
            Question(
                external_id=row.external_id, text=row.text, source=source, domains=list(row.domains)
            )
        )
        known_ids[row.external_id] = f"in the file (line {row.line})"
        known_texts[norm] = row.external_id
        added.append(row.external_id)
    session.flush()
    return QuestionImportReport(source, tuple(added), tuple(dups))


def import_sample_questions(*, session: Session) -> QuestionImportReport:
    """Import the bundled sample questions (idempotent: repeats are duplicates)."""
    rows = read_questions(sample_questions_path())
    return store_questions(rows, session=session, source=SAMPLE_SOURCE)


def list_questions(*, session: Session, tier: str | None = None) -> list[Question]:
    """Stored questions in import order; ``tier`` keeps only ``core`` or ``relaxed``.

    ``relaxed`` includes ``core`` (a question all three annotators accept also passes
    the 2-of-3 bar).
    """
    # requests an instrument stores as questions (memory banks...) are not benchmark items
    query = select(Question).where(benchmark_only()).order_by(col(Question.id))
    if tier == "core":
        query = query.where(Question.tier == "core")
    elif tier == "relaxed":
        query = query.where(col(Question.tier).in_(("core", "relaxed")))
    elif tier is not None:
        raise InputError(f"Unknown question selection {tier!r}: use all, core or relaxed.")
    return list(session.exec(query).all())
