"""The toy's runs as the Runs page lists them (its plugin's ``run_listing``)."""

from __future__ import annotations

from sqlmodel import Session

from driftlens_plugins import RunLine
from storage.repo.instrument_runs import list_instrument_runs, record_count
from tests.toy_instrument.store import INSTRUMENT


def run_lines(*, session: Session) -> list[RunLine]:
    """Every coin run, newest first, with the answers it holds (its page shows none singly)."""
    lines = []
    for r in reversed(list_instrument_runs(INSTRUMENT, session=session)):
        assert r.id is not None
        lines.append(
            RunLine(
                name=r.name,
                model=r.model,
                created=f"{r.created_at:%Y-%m-%d %H:%M}",
                status=r.status,
                simulated=r.simulated,
                details=(("answers", record_count(r.id, session=session)),),
                page="tests.toy_instrument.page",
            )
        )
    return lines
