"""Disposition drift's runs as the Runs page lists them (its plugin's ``run_listing``).

A disposition run is one arm of a study (a model asked every probe), named ``study:arm``
as its stored role assignments are (:func:`study.disposition.roles.arm_run`).
"""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import Session, col, select

from driftlens_plugins import RunLine
from llm.specs import ModelSpec
from storage.errors import DriftLensError
from storage.models import DispositionArm, DispositionResponse
from study.disposition.roles import arm_run


def _simulated(model: str) -> bool:
    try:
        return ModelSpec.parse(model).simulator_output
    except DriftLensError:  # a stored spec this version no longer reads: not ours to judge
        return False


def run_lines(*, session: Session) -> list[RunLine]:
    """Every arm of every study, newest first, with the answers it holds."""
    arms = list(session.exec(select(DispositionArm).order_by(col(DispositionArm.id).desc())))
    counts = dict(
        session.exec(
            select(DispositionResponse.arm_id, func.count())
            .where(col(DispositionResponse.answer).is_not(None))
            .group_by(col(DispositionResponse.arm_id))
        ).all()
    )
    return [
        RunLine(
            name=arm_run(a.study, a.name),
            model=a.model,
            created=f"{a.created_at:%Y-%m-%d %H:%M}",
            status="stored",
            simulated=_simulated(a.model),
            details=(
                ("study", a.study),
                ("role", a.role),
                ("dose", "" if a.dose is None else f"{a.dose:g}"),
                ("answers", int(counts.get(a.id or 0, 0))),
            ),
            page="app.pages.disposition",
            query=(("study", a.study),),
        )
        for a in arms
    ]
