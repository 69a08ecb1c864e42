"""Recorded drift analyses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session, col, select

from storage.models import Analysis


def record_analysis(
    *,
    run_id: int,
    labeler_id: int,
    ontology_version_id: int,
    config: Mapping[str, Any],
    result: Mapping[str, Any],
    implementation: str,
    out_dir: str | None = None,
    session: Session,
) -> Analysis:
    """Store one analysis (its configuration, summary result and core implementation)."""
    row = Analysis(
        run_id=run_id,
        labeler_id=labeler_id,
        ontology_version_id=ontology_version_id,
        config=dict(config),
        result=dict(result),
        implementation=implementation,
        out_dir=out_dir,
    )
    session.add(row)
    session.flush()
    return row


def list_analyses(*, session: Session, run_id: int | None = None) -> list[Analysis]:
    """Analyses, newest first (of one run when given)."""
    stmt = select(Analysis)
    if run_id is not None:
        stmt = stmt.where(Analysis.run_id == run_id)
    return list(session.exec(stmt.order_by(col(Analysis.id).desc())))
