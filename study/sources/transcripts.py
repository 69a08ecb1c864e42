"""A source-reliance run's stored probe replies as a reader reads them: the probe's key,
the letter read and how, and the reply and reasoning as the model wrote them
(``sources show``).

The reply, the reasoning and the error are model or endpoint output: whoever shows them
escapes them (the CLI prints them through :class:`app.cli.console.SafeConsole`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.errors import InputError, NotFoundError
from storage.repo.sources import require_source_run
from storage.source_models import SourceProbe


@dataclass(frozen=True)
class ProbeReply:
    """One stored probe of a run: its key, the letter read, and the reply as written."""

    item: str
    variant: str
    tier: int
    instruction: str
    correct: str
    choice: str
    method: str
    status: str
    text: str | None
    reasoning: str | None
    error: str | None


def run_replies(
    run: str, *, session: Session, item: str | None = None, limit: int = 10
) -> tuple[list[ProbeReply], int]:
    """The first ``limit`` probes of ``run`` (item, variant order), optionally of one item,
    and how many there are.

    Raises:
        NotFoundError: no such run, or no probe of ``item`` in it.
        InputError: ``limit`` below 1.
    """
    if limit < 1:
        raise InputError("--limit must be at least 1.")
    row = require_source_run(run, session=session)
    stmt = select(SourceProbe).where(SourceProbe.run_id == row.id)
    if item is not None:
        stmt = stmt.where(SourceProbe.item_id == item)
    total = int(session.exec(select(func.count()).select_from(stmt.subquery())).one())
    if item is not None and not total:
        raise NotFoundError(f"Run {run!r} holds no probe of item {item!r}.")
    rows = session.exec(
        stmt.order_by(
            col(SourceProbe.item_id), col(SourceProbe.instruction), col(SourceProbe.tier),
            col(SourceProbe.variant),
        ).limit(limit)
    ).all()  # fmt: skip
    out = [
        ProbeReply(
            item=p.item_id, variant=p.variant, tier=p.tier, instruction=p.instruction,
            correct=p.correct_letter, choice=p.choice, method=p.method, status=p.status,
            text=p.text, reasoning=p.reasoning, error=p.error,
        )
        for p in rows
    ]  # fmt: skip
    return out, total
