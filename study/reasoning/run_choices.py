"""Which generation runs the reasoning-drift pages offer (the other instruments' runs left out).

Memory-conflict runs are generation runs too (their own prompt versions), and a workspace
with the conflicts demo holds a dozen of them: they have no reasoning steps to label, so
Rounds, Validation, Analysis and Runs offer only runs made with the step prompt.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from storage.models import GenerationRun, Response
from study.prompts import PROMPT_VERSION

#: Prompt versions of reasoning-drift runs start with this (``steps-v1``; a later ``steps-v2``).
STEP_PROMPT_FAMILY = PROMPT_VERSION.rsplit("-", 1)[0] + "-"


def reasoning_runs(*, session: Session) -> list[str]:
    """Names of the reasoning-drift runs, newest first."""
    rows = session.exec(
        select(GenerationRun.name)
        .where(col(GenerationRun.prompt_version).startswith(STEP_PROMPT_FAMILY))
        .order_by(col(GenerationRun.id).desc())
    )
    return list(rows)


def runs_with_steps(runs: list[str], *, session: Session) -> list[str]:
    """The runs of ``runs`` (same order) holding at least one response with parsed steps."""
    if not runs:
        return []
    parsed = (
        select(Response.id)
        .where(Response.run_id == GenerationRun.id, Response.parse_status == "ok")
        .exists()
    )
    have = set(
        session.exec(select(GenerationRun.name).where(col(GenerationRun.name).in_(runs), parsed))
    )
    return [r for r in runs if r in have]
