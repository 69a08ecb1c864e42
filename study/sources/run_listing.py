"""Source reliance's runs as the Runs page lists them (its plugin's ``run_listing``)."""

from __future__ import annotations

from sqlmodel import Session

from driftlens_plugins import RunLine
from study.sources.store import source_run_lines


def run_lines(*, session: Session) -> list[RunLine]:
    """Every stored source-reliance run, newest first, with its items and probe counts.

    The Source reliance page opens a stored run as ``?results=run:NAME``.
    """
    return [
        RunLine(
            name=r.name,
            model=r.model,
            created=r.created,
            status=r.status,
            simulated=r.simulated,
            details=(
                ("items", r.items),
                ("instructions", r.instructions),
                ("probes", r.probes),
                ("unknown", r.unknown),
                ("failed", r.failed),
            ),
            page="app.pages.sources",
            query=(("results", f"run:{r.name}"),),
        )
        for r in source_run_lines(session=session)
    ]
