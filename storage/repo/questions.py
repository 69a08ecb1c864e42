"""Benchmark questions: import (upsert on ``external_id``), LLM-filter results, tiers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, not_, or_
from sqlmodel import Session, col, select

from storage.models import Question
from storage.repo.chunks import id_chunks
from storage.repo.lookup import require_row
from storage.types import utcnow

_IMPORT_FIELDS = ("text", "source", "domains")


@dataclass(frozen=True)
class UpsertCounts:
    """How many rows an upsert inserted, changed and left alone."""

    inserted: int = 0
    updated: int = 0
    unchanged: int = 0

    @property
    def total(self) -> int:
        """All rows seen."""
        return self.inserted + self.updated + self.unchanged


def upsert_questions(questions: Iterable[Question], *, session: Session) -> UpsertCounts:
    """Insert new questions and refresh ``text``/``source``/``domains`` of known ones.

    Questions are matched on ``external_id``; filter results and tiers of existing rows are
    never touched (re-importing a file does not undo curation). Duplicate external ids in
    the input: the last one wins.
    """
    incoming: dict[str, Question] = {}
    for q in questions:
        incoming[q.external_id] = q
    if not incoming:
        return UpsertCounts()
    existing: dict[str, Question] = {}
    for chunk in id_chunks(incoming):
        for found in session.exec(select(Question).where(col(Question.external_id).in_(chunk))):
            existing[found.external_id] = found
    inserted = updated = unchanged = 0
    for external_id, q in incoming.items():
        row = existing.get(external_id)
        if row is None:
            session.add(
                Question(
                    external_id=q.external_id,
                    text=q.text,
                    source=q.source,
                    domains=list(q.domains or []),
                    tier=q.tier,
                    filter_label=q.filter_label,
                    filter_reason=q.filter_reason,
                    filter_domains=q.filter_domains,
                    filter_model=q.filter_model,
                    filter_error=q.filter_error,
                    filter_raw=q.filter_raw,
                )
            )
            inserted += 1
            continue
        changed = False
        for name in _IMPORT_FIELDS:
            new = getattr(q, name)
            if name == "domains":
                new = list(new or [])
            if getattr(row, name) != new:
                setattr(row, name, new)
                changed = True
        if changed:
            row.updated_at = utcnow()
            updated += 1
        else:
            unchanged += 1
    session.flush()
    return UpsertCounts(inserted=inserted, updated=updated, unchanged=unchanged)


#: ``Question.source`` prefix of rows an instrument owns (e.g. a memory bank's request):
#: they key responses like questions but are not part of the reasoning benchmark.
INSTRUMENT_SOURCE_PREFIX = "instrument:"


def benchmark_only() -> Any:
    """SQL condition keeping the benchmark's own questions (not instrument-owned rows)."""
    return or_(
        col(Question.source).is_(None),
        not_(col(Question.source).startswith(INSTRUMENT_SOURCE_PREFIX)),
    )


def benchmark_question_count(*, session: Session) -> int:
    """How many questions the benchmark holds (what the Benchmark page lists; not the
    request rows an instrument stores as questions)."""
    query = select(func.count()).select_from(Question).where(benchmark_only())
    return int(session.execute(query).scalar_one())


def get_question(external_id: str, *, session: Session) -> Question | None:
    """The question with this external id, if any."""
    return session.exec(select(Question).where(Question.external_id == external_id)).first()


def list_questions(
    *,
    session: Session,
    tier: str | Sequence[str] | None = None,
    filter_label: str | None = None,
    external_ids: Sequence[str] | None = None,
    unfiltered_only: bool = False,
    limit: int | None = None,
    offset: int = 0,
    include_instruments: bool = False,
) -> list[Question]:
    """Questions in id order, optionally restricted.

    Args:
        session: the open session.
        tier: one tier or several (``("core", "relaxed")``).
        filter_label: ``"ACCEPT"`` or ``"REJECT"``.
        external_ids: only these.
        unfiltered_only: only questions the LLM filter has not labelled yet.
        limit: at most this many.
        offset: skip this many first.
        include_instruments: also list the requests an instrument stores as questions
            (``source`` starting with :data:`INSTRUMENT_SOURCE_PREFIX`), which are not part
            of the reasoning benchmark.
    """
    stmt = select(Question)
    if not include_instruments:
        stmt = stmt.where(benchmark_only())
    if tier is not None:
        tiers = [tier] if isinstance(tier, str) else list(tier)
        stmt = stmt.where(col(Question.tier).in_(tiers))
    if filter_label is not None:
        stmt = stmt.where(Question.filter_label == filter_label)
    if unfiltered_only:
        stmt = stmt.where(col(Question.filter_label).is_(None))
    if external_ids is not None:
        stmt = stmt.where(col(Question.external_id).in_(list(external_ids)))
    stmt = stmt.order_by(col(Question.id)).offset(offset)
    if limit is not None:
        stmt = stmt.limit(limit)
    return list(session.exec(stmt))


def count_questions(*, session: Session, tier: str | None = None) -> int:
    """Number of questions (of one tier when given)."""
    stmt = select(func.count()).select_from(Question).where(benchmark_only())
    if tier is not None:
        stmt = stmt.where(Question.tier == tier)
    return int(session.exec(stmt).one())


def set_filter_result(
    question_id: int,
    *,
    label: str | None,
    reason: str | None,
    domains: Sequence[str] | None,
    model: str | None,
    raw: str | None,
    error: str | None = None,
    session: Session,
) -> Question:
    """Record the LLM filter's verdict (or its error) on one question."""
    row = require_row(session, Question, question_id, what="Question")
    row.filter_label = label
    row.filter_reason = reason
    row.filter_domains = list(domains) if domains is not None else None
    row.filter_model = model
    row.filter_raw = raw
    row.filter_error = error
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return row


def set_tiers(tiers: Mapping[int, str | None], *, session: Session) -> int:
    """Set ``tier`` per question id (``None`` removes it); returns how many changed."""
    changed = 0
    for chunk in id_chunks(tiers):
        for row in session.exec(select(Question).where(col(Question.id).in_(chunk))):
            assert row.id is not None
            new = tiers[row.id]
            if row.tier != new:
                row.tier = new
                row.updated_at = utcnow()
                session.add(row)
                changed += 1
    session.flush()
    return changed
