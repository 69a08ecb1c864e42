"""Memory-bank instances: the JSONL format, its validator and the shipped sample.

One JSON object per line. An instance is a user's stored memories in conflict plus a
natural request that leaves out what would settle the conflict:

* ``instance_id``, ``persona_id``, ``type`` (``CPC`` context-partitioned, ``BOC``
  behaviour-oscillation, ``SCC`` source-contradiction), ``attribute``, ``domain``;
* ``structure`` — CPC: ``partition_type``; BOC: ``driver`` and ``shape``; SCC:
  ``source_conflict_type`` and ``n_sources`` (2–4);
* ``core_memories`` (the conflict-bearing ones), ``background_memories`` (1–2 neutral ones;
  together 7–11), ``distractors`` (exactly 6, same domain, unrelated to the conflict);
* ``query`` — the request; ``clarification_reference`` — what a good clarifying question
  would target (judges only, for D4);
* ``provenance`` (judges only, never shown to the answering model): ``summary`` of the
  conflict, ``side_a``/``side_b`` (indices into ``core_memories`` supporting each side),
  ``relation`` (indices of the memories that carry the context / phase / source relation
  that makes the conflict interpretable), optional ``leak_terms``;
* ``high_risk`` — SCC instances where a wrong commitment is consequential (D6 applies).

Model-visible memories read like a memory system's records: 18–32 words, third person,
no exact dates or clock times, no source labels ("Source: chat 4"), no conclusions. The
request must not give the conflict away: the leakage scan rejects conflict vocabulary
("conflicting", "contradict", ...), the instance's own ``leak_terms`` and, for BOC and
SCC, temporal anchors ("lately", "these days", ...). Every problem is reported with the
file's line number.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlmodel import Session

from storage.errors import InputError
from storage.safe_text import holds_nul

ConflictType = Literal["CPC", "BOC", "SCC"]
SAMPLE_FILE = "sample_banks.jsonl"
MIN_WORDS, MAX_WORDS = 18, 32
N_DISTRACTORS = 6
MIN_SHOWN, MAX_SHOWN = 7, 11

# First and second person: memories are records *about* the user.
_PERSON_RE = re.compile(r"\b(i|me|my|mine|myself|we|us|our|ours|you|your|yours)\b", re.I)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_TIMESTAMP_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b"),  # 2025-03-14
    re.compile(r"\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"),  # 14/03/2025
    re.compile(r"\b\d{1,2}:\d{2}\b"),  # 14:30
    re.compile(r"\b\d{1,2}\s?(am|pm)\b", re.I),  # 9am
    re.compile(rf"\b({_MONTHS})\.?\s+\d{{1,2}}(st|nd|rd|th)?\b", re.I),  # March 14
    re.compile(rf"\b\d{{1,2}}(st|nd|rd|th)?\s+(of\s+)?({_MONTHS})\b", re.I),  # 14 March
    re.compile(r"\b(19|20)\d{2}\b"),  # a calendar year
)
_SOURCE_LABEL_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r"^\s*[\[(]"),  # "[session 4] ..." / "(from chat) ..."
    re.compile(r"\bsource\s*:", re.I),
    re.compile(r"\b(session|conversation|chat|turn|dialogue)\s*(#|no\.?)?\s*\d+\b", re.I),
    re.compile(r"\b(memory|record)\s*(id|#)\s*:?\s*\w+", re.I),
)
#: Words that announce the conflict; a request containing one leaks what is tested.
CONFLICT_WORDS: tuple[str, ...] = (
    "conflict",
    "conflicting",
    "contradict",
    "contradictory",
    "contradiction",
    "inconsistent",
    "inconsistency",
    "mixed signals",
    "disagree",
    "disagreement",
    "flip-flop",
    "flip flop",
    "back and forth",
    "oscillat",
    "torn between",
    "on the other hand",
)
#: Temporal anchors that would tell a BOC/SCC request which phase or report is current.
TEMPORAL_ANCHORS: tuple[str, ...] = (
    "lately",
    "recently",
    "these days",
    "right now",
    "currently",
    "nowadays",
    "this week",
    "last week",
    "this month",
    "last month",
    "yesterday",
    "today",
    "most recent",
    "latest",
)


class BankStructure(BaseModel):
    """The conflict's structure (which fields apply depends on the type)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    partition_type: str | None = None
    driver: str | None = None
    shape: str | None = None
    source_conflict_type: str | None = None
    n_sources: int | None = Field(default=None, ge=2, le=4)


class BankProvenance(BaseModel):
    """What judges see beyond the bank: the conflict and which memories carry it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary: str = Field(min_length=1)
    side_a: tuple[int, ...] = Field(min_length=1)
    side_b: tuple[int, ...] = Field(min_length=1)
    relation: tuple[int, ...] = Field(min_length=1)
    leak_terms: tuple[str, ...] = ()


class ConflictInstance(BaseModel):
    """One memory-bank instance (see the module docstring for every field)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    instance_id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    persona_id: str = Field(min_length=1)
    type: ConflictType
    attribute: str = Field(min_length=1)
    domain: str = Field(min_length=1)
    structure: BankStructure
    core_memories: tuple[str, ...]
    background_memories: tuple[str, ...]
    distractors: tuple[str, ...]
    query: str = Field(min_length=1)
    clarification_reference: str = Field(min_length=1)
    provenance: BankProvenance
    high_risk: bool = False

    def shown_memories(self) -> tuple[str, ...]:
        """Every model-visible memory: core, background, distractors."""
        return (*self.core_memories, *self.background_memories, *self.distractors)


@dataclass(frozen=True)
class BankProblem:
    """One validation problem (``line`` counts from 1)."""

    line: int
    message: str


def memory_problems(text: str) -> list[str]:
    """Style problems of one model-visible memory (empty when it is fine)."""
    out: list[str] = []
    n = len(text.split())
    if not MIN_WORDS <= n <= MAX_WORDS:
        out.append(f"has {n} words (memories need {MIN_WORDS}-{MAX_WORDS})")
    person = _PERSON_RE.search(text)
    if person:
        out.append(f"is not third person ({person.group(0)!r})")
    for pat in _TIMESTAMP_RES:
        hit = pat.search(text)
        if hit:
            out.append(f"contains a timestamp ({hit.group(0)!r})")
            break
    for pat in _SOURCE_LABEL_RES:
        hit = pat.search(text)
        if hit:
            out.append(f"carries a source label ({hit.group(0).strip()!r})")
            break
    return out


def leakage(query: str, type_: str, leak_terms: Iterable[str] = ()) -> list[str]:
    """Words of the request that would give the conflict or its resolving cue away."""
    low = " ".join(query.lower().split())
    found: list[str] = []
    for w in (*CONFLICT_WORDS, *(t.lower() for t in leak_terms if t.strip())):
        # report the whole word as written ("conflicting", not the stem "conflict")
        hit = re.search(rf"\b{re.escape(w)}[\w-]*", low)
        if hit and hit.group(0) not in found:
            found.append(hit.group(0))
    if type_ in ("BOC", "SCC"):
        found += [w for w in TEMPORAL_ANCHORS if re.search(rf"\b{re.escape(w)}\b", low)]
        if any(p.search(query) for p in _TIMESTAMP_RES):
            found.append("a date or time")
    return found


def instance_problems(inst: ConflictInstance) -> list[str]:
    """Every content problem of a schema-valid instance."""
    out: list[str] = []
    shown = len(inst.core_memories) + len(inst.background_memories)
    if len(inst.core_memories) < 4:
        out.append(f"has {len(inst.core_memories)} core memories (at least 4 carry a conflict)")
    if not 1 <= len(inst.background_memories) <= 2:
        out.append(f"has {len(inst.background_memories)} background memories (need 1-2)")
    if not MIN_SHOWN <= shown <= MAX_SHOWN:
        out.append(f"shows {shown} core + background memories (need {MIN_SHOWN}-{MAX_SHOWN})")
    if len(inst.distractors) != N_DISTRACTORS:
        out.append(f"has {len(inst.distractors)} distractors (need exactly {N_DISTRACTORS})")
    for group, texts in (
        ("core memory", inst.core_memories),
        ("background memory", inst.background_memories),
        ("distractor", inst.distractors),
    ):
        for j, text in enumerate(texts, start=1):
            out += [f"{group} {j} {p}" for p in memory_problems(text)]
    s = inst.structure
    if inst.type == "CPC" and not s.partition_type:
        out.append("a CPC instance needs structure.partition_type")
    if inst.type == "BOC" and not (s.driver and s.shape):
        out.append("a BOC instance needs structure.driver and structure.shape")
    if inst.type == "SCC" and not (s.source_conflict_type and s.n_sources):
        out.append("an SCC instance needs structure.source_conflict_type and n_sources")
    if inst.high_risk and inst.type != "SCC":
        out.append("only SCC instances can be high_risk")
    p = inst.provenance
    n_core = len(inst.core_memories)
    for name, idx in (("side_a", p.side_a), ("side_b", p.side_b), ("relation", p.relation)):
        bad = [i for i in idx if not 0 <= i < n_core]
        if bad:
            out.append(f"provenance.{name} index {bad[0]} is not a core memory (0-{n_core - 1})")
    if set(p.side_a) & set(p.side_b):
        out.append("provenance.side_a and side_b share a memory")
    leaks = leakage(inst.query, inst.type, p.leak_terms)
    if leaks:
        out.append(f"the request leaks the conflict: it contains {leaks[0]!r}")
    return out


def _schema_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err["loc"]) or "the object"
    return f"{where}: {err['msg']}"


@dataclass(frozen=True)
class BankFile:
    """A parsed bank file: the valid instances and every problem found."""

    instances: tuple[ConflictInstance, ...]
    problems: tuple[BankProblem, ...]


def parse_banks(text: str) -> BankFile:
    """Parse and validate JSONL bank text; problems carry line numbers (nothing raised)."""
    instances: list[ConflictInstance] = []
    problems: list[BankProblem] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(BankProblem(n, f"is not valid JSON ({exc.msg})"))
            continue
        if not isinstance(data, dict):
            problems.append(BankProblem(n, "is not a JSON object"))
            continue
        if holds_nul(data):
            problems.append(BankProblem(n, "contains a NUL character (\\u0000)"))
            continue
        try:
            inst = ConflictInstance.model_validate(data)
        except ValidationError as exc:
            problems.append(BankProblem(n, _schema_message(exc)))
            continue
        found = instance_problems(inst)
        if inst.instance_id in seen:
            found.append(
                f"repeats instance_id {inst.instance_id!r} of line {seen[inst.instance_id]}"
            )
        if found:
            problems.extend(BankProblem(n, f"{inst.instance_id}: {m}") for m in found)
            continue
        seen[inst.instance_id] = n
        instances.append(inst)
    return BankFile(tuple(instances), tuple(problems))


def read_banks(path: Path) -> tuple[ConflictInstance, ...]:
    """Read a bank file and return its instances, or fail on the first problem.

    Raises:
        InputError: the file is missing, unreadable, empty, or any line has a problem
            (the message names the file, the line and how many more problems there are).
    """
    if not path.exists():
        raise InputError(f"File not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} cannot be read as UTF-8 text ({exc})") from None
    parsed = parse_banks(text)
    if parsed.problems:
        # the first few problems in the one line, so a file is fixed in one pass
        shown = parsed.problems[:3]
        more = len(parsed.problems) - len(shown)
        tail = f" ({more} more problem(s) in the file)" if more else ""
        listed = "; ".join(f"line {p.line}: {p.message}" for p in shown)
        raise InputError(f"{path} {listed}{tail}.")
    if not parsed.instances:
        raise InputError(f"{path} holds no bank instances (one JSON object per line).")
    return parsed.instances


def sample_banks_path() -> Path:
    """The shipped sample (written by us; 6 personas x 3 types x 2, plus 6 high-risk SCC)."""
    return Path(str(resources.files("study.conflicts") / "data" / SAMPLE_FILE))


def load_sample_banks() -> tuple[ConflictInstance, ...]:
    """The shipped sample instances."""
    return read_banks(sample_banks_path())


# ------------------------------------------------------------------------- storage

#: ``Question.source`` of a bank's request (instrument-owned, not a benchmark question).
QUESTION_SOURCE = "instrument:conflicts"


def question_key(instance_id: str) -> str:
    """The ``Question.external_id`` of an instance's request."""
    return f"conflicts/{instance_id}"


@dataclass(frozen=True)
class BankImport:
    """What an import stored."""

    source: str
    inserted: int
    updated: int
    unchanged: int

    @property
    def total(self) -> int:
        """Instances in the file."""
        return self.inserted + self.updated + self.unchanged


def store_banks(
    instances: Iterable[ConflictInstance], *, source: str, session: Session
) -> BankImport:
    """Store validated instances (idempotent: same content, nothing changes).

    Each instance's request becomes an instrument-owned ``Question`` (responses key on it);
    the instance itself is a ``ConflictBank`` row with its content hash.
    """
    from storage.hashing import content_hash
    from storage.models import ConflictBank, Question
    from storage.repo.conflicts import upsert_conflict_bank
    from storage.repo.questions import get_question, upsert_questions

    counts = {"inserted": 0, "updated": 0, "unchanged": 0}
    for inst in instances:
        key = question_key(inst.instance_id)
        upsert_questions(
            [
                Question(
                    external_id=key, text=inst.query, source=QUESTION_SOURCE, domains=[inst.domain]
                )
            ],
            session=session,
        )
        q = get_question(key, session=session)
        assert q is not None and q.id is not None
        content = inst.model_dump(mode="json")
        _, what = upsert_conflict_bank(
            ConflictBank(
                instance_id=inst.instance_id,
                question_id=q.id,
                conflict_type=inst.type,
                high_risk=inst.high_risk,
                source=source,
                content=content,
                content_hash=content_hash(content),
            ),
            session=session,
        )
        counts[what] += 1
    return BankImport(source=source, **counts)


def import_bank_file(path: Path | None, *, session: Session) -> BankImport:
    """Validate and store a bank file (``None``: the shipped sample)."""
    p = path or sample_banks_path()
    instances = read_banks(p)
    return store_banks(instances, source="sample" if path is None else p.name, session=session)


def stored_instances(*, session: Session) -> list[tuple[int, ConflictInstance]]:
    """Every stored instance with its question id, in import order."""
    from storage.repo.conflicts import list_conflict_banks

    return [
        (row.question_id, ConflictInstance.model_validate(row.content))
        for row in list_conflict_banks(session=session)
    ]
