"""Memory-bank instances of the conflicts instrument (one row per ``instance_id``)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session, col, select

from storage.models import ConflictBank, Response
from storage.repo.chunks import id_chunks


def upsert_conflict_bank(row: ConflictBank, *, session: Session) -> tuple[ConflictBank, str]:
    """Insert a bank, or update the stored one with the same ``instance_id``.

    Returns:
        The stored row and what happened: ``"inserted"``, ``"updated"`` or ``"unchanged"``.
    """
    found = session.exec(
        select(ConflictBank).where(ConflictBank.instance_id == row.instance_id)
    ).first()
    if found is None:
        session.add(row)
        session.flush()
        return row, "inserted"
    if found.content_hash == row.content_hash:
        return found, "unchanged"
    for name in ("question_id", "conflict_type", "high_risk", "source", "content", "content_hash"):
        setattr(found, name, getattr(row, name))
    session.add(found)
    session.flush()
    return found, "updated"


def list_conflict_banks(
    *, session: Session, instance_ids: Sequence[str] | None = None
) -> list[ConflictBank]:
    """Stored banks in import order, optionally only these instance ids."""
    stmt = select(ConflictBank)
    if instance_ids is not None:
        stmt = stmt.where(col(ConflictBank.instance_id).in_(list(instance_ids)))
    return list(session.exec(stmt.order_by(col(ConflictBank.id))))


def banks_by_question(question_ids: Sequence[int], *, session: Session) -> dict[int, ConflictBank]:
    """Stored banks keyed by their question id."""
    out: dict[int, ConflictBank] = {}
    for chunk in id_chunks(question_ids):
        stmt = select(ConflictBank).where(col(ConflictBank.question_id).in_(chunk))
        for row in session.exec(stmt):
            out[row.question_id] = row
    return out


def representative_responses(run_id: int, *, session: Session) -> dict[int, Response]:
    """``question_id → response`` of each bank in a conflicts run: lowest dose, then sample.

    On the pipeline track an instance's extracted bank is the same for every dose and
    sample of a run, so per-bank labels (observability) attach to this one response.
    """
    best: dict[int, tuple[tuple[int, int], Response]] = {}
    stmt = select(Response).where(Response.run_id == run_id, Response.condition_class == "bank")
    for r in session.exec(stmt.order_by(col(Response.id))):
        ctx = (r.request or {}).get("context", {})
        key = (int(ctx.get("n_distractors", 0)), r.sample)
        cur = best.get(r.question_id)
        if cur is None or key < cur[0]:
            best[r.question_id] = (key, r)
    return {qid: r for qid, (_, r) in sorted(best.items())}


def representative_banks(run_id: int, *, session: Session) -> list[tuple[Response, ConflictBank]]:
    """Each bank of a conflicts run with its representative response, by question id.

    The response is :func:`representative_responses`' choice; a question without a stored
    bank is left out.
    """
    best = representative_responses(run_id, session=session)
    banks = banks_by_question(sorted(best), session=session)
    return [(r, banks[qid]) for qid, r in best.items() if qid in banks]


def extractor_label(response: Response) -> str:
    """The observability label the pipeline extractor gave a response's bank (``FULL``: none)."""
    return str((response.request or {}).get("context", {}).get("observability", "FULL"))


def extracted_core(response: Response) -> tuple[str, ...]:
    """The core memories a response's bank showed, in extraction order (pipeline: what was kept)."""
    ctx = (response.request or {}).get("context", {})
    order = [o for o in ctx.get("order", []) if o.get("provenance") == "core"]
    return tuple(
        str(o.get("text", "")) for o in sorted(order, key=lambda o: int(o.get("index", 0)))
    )
