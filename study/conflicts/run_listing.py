"""Memory conflicts' runs as the Runs page lists them (its plugin's ``run_listing``)."""

from __future__ import annotations

from sqlmodel import Session

from driftlens_plugins import RunLine
from study.conflicts.cases import conflict_runs
from study.generation_lines import generation_run_lines


def run_lines(*, session: Session) -> list[RunLine]:
    """Every memory-conflicts run, newest first, with the answers it holds."""
    return generation_run_lines(
        conflict_runs(session=session), session=session, page="app.pages.conflicts"
    )
