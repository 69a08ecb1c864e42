"""Reasoning drift's runs as the Runs page lists them (its plugin's ``run_listing``)."""

from __future__ import annotations

from sqlmodel import Session, col, select

from driftlens_plugins import RunLine
from storage.models import GenerationRun
from study.generation_lines import generation_run_lines
from study.reasoning.run_choices import OTHER_INSTRUMENT_PROMPTS

#: The page that browses one run (``?run=``): the Runs page itself, under the listing.
RUN_PAGE = "app.pages.runs"


def run_lines(*, session: Session) -> list[RunLine]:
    """Every reasoning-drift run, newest first, with the responses it holds."""
    runs = session.exec(
        select(GenerationRun)
        .where(
            *(
                ~col(GenerationRun.prompt_version).startswith(prefix)
                for prefix in OTHER_INSTRUMENT_PROMPTS
            )
        )
        .order_by(col(GenerationRun.id).desc())
    ).all()
    return generation_run_lines(runs, session=session, page=RUN_PAGE)
