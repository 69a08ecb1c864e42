"""Repository functions of the source-reliance instrument (runs and probes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.errors import NotFoundError
from storage.repo._upsert import upsert_replacing
from storage.source_models import SourceClaim, SourceProbe, SourceRun

_PROBE_KEY = ("run_id", "instruction", "tier", "item_id", "variant")


def get_source_run(name: str, *, session: Session) -> SourceRun | None:
    """The source-reliance run ``name``, if any."""
    return session.exec(select(SourceRun).where(SourceRun.name == name)).first()


def require_source_run(name: str, *, session: Session) -> SourceRun:
    """The source-reliance run ``name``.

    Raises:
        NotFoundError: no such run (the sentence names the stored ones).
    """
    run = get_source_run(name, session=session)
    if run is None:
        names = [r.name for r in list_source_runs(session=session)]
        known = f"stored runs: {', '.join(names[:5])}" if names else "no runs are stored yet"
        raise NotFoundError(f"No source-reliance run named {name!r} ({known}).")
    return run


def add_source_run(
    name: str, *, model: str, config: Mapping[str, Any], simulated: bool, session: Session
) -> SourceRun:
    """Store a new run row (flushed, not committed)."""
    run = SourceRun(name=name, model=model, config=dict(config), simulated=simulated)
    session.add(run)
    session.flush()
    return run


def set_source_run_status(run_id: int, status: str, *, session: Session) -> None:
    """Set a run's status (not committed)."""
    run = session.get(SourceRun, run_id)
    if run is not None:
        run.status = status
        session.add(run)


def list_source_runs(*, session: Session) -> list[SourceRun]:
    """Every source-reliance run, newest first."""
    return list(session.exec(select(SourceRun).order_by(col(SourceRun.id).desc())))


def upsert_source_probes(rows: Sequence[Mapping[str, Any]], *, session: Session) -> int:
    """Insert or replace probes by (run, instruction, tier, item, variant).

    A replaced probe (a failed one asked again) keeps its ``created_at``.
    """
    return upsert_replacing(session, SourceProbe, rows, key=_PROBE_KEY)


def source_probes(run_id: int, *, session: Session) -> list[SourceProbe]:
    """Every stored probe of a run (in insertion order)."""
    stmt = select(SourceProbe).where(SourceProbe.run_id == run_id).order_by(col(SourceProbe.id))
    return list(session.exec(stmt))


@dataclass(frozen=True)
class SourceRunCounts:
    """How many probes a run holds, by status."""

    probes: int
    ok: int
    unknown: int
    failed: int


def source_run_counts(run_ids: Sequence[int], *, session: Session) -> dict[int, SourceRunCounts]:
    """Probe counts per run and status (one grouped query)."""
    if not run_ids:
        return {}
    stmt = (
        select(SourceProbe.run_id, SourceProbe.status, func.count())
        .where(col(SourceProbe.run_id).in_(list(run_ids)))
        .group_by(col(SourceProbe.run_id), col(SourceProbe.status))
    )
    by: dict[int, dict[str, int]] = {int(r): {} for r in run_ids}
    for run_id, status, n in session.exec(stmt):
        by[int(run_id)][str(status)] = int(n)
    return {
        r: SourceRunCounts(
            probes=sum(c.values()),
            ok=c.get("ok", 0),
            unknown=c.get("unknown", 0),
            failed=c.get("failed", 0),
        )
        for r, c in by.items()
    }


_CLAIM_KEY = ("claim_set", "item_id")


def upsert_source_claims(rows: Sequence[Mapping[str, Any]], *, session: Session) -> int:
    """Insert or replace claims by (claim set, item); a replaced claim keeps ``created_at``."""
    return upsert_replacing(session, SourceClaim, rows, key=_CLAIM_KEY)


def source_claims(claim_set: str, *, session: Session) -> list[SourceClaim]:
    """The claims of one set (insertion order)."""
    stmt = (
        select(SourceClaim).where(SourceClaim.claim_set == claim_set).order_by(col(SourceClaim.id))
    )
    return list(session.exec(stmt))


def claim_sets(*, session: Session) -> dict[str, int]:
    """Stored claim sets and how many claims each holds."""
    stmt = select(SourceClaim.claim_set, func.count()).group_by(col(SourceClaim.claim_set))
    return {str(name): int(n) for name, n in session.exec(stmt)}
