"""Model roles stored with runs (:class:`storage.role_models.ModelRole`)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session, col, select

from storage.models import ModelRole


def record_role(row: ModelRole, *, session: Session) -> ModelRole:
    """Store one role assignment (idempotent per scope, run, role and model).

    A second record of the same key keeps the first row; ``self_judging`` and the model
    under test are updated (a run judged again with ``--allow-self-judging`` says so).
    The caller commits.
    """
    old = session.exec(
        select(ModelRole).where(
            ModelRole.scope == row.scope,
            ModelRole.run == row.run,
            ModelRole.role == row.role,
            ModelRole.model == row.model,
        )
    ).first()
    if old is None:
        session.add(row)
        session.flush()
        return row
    old.self_judging = row.self_judging
    old.model_under_test = row.model_under_test
    session.add(old)
    session.flush()
    return old


def roles_of(scope: str, runs: Sequence[str], *, session: Session) -> list[ModelRole]:
    """The role rows of ``runs`` of one scope, by run, role and model."""
    if not runs:
        return []
    rows = session.exec(
        select(ModelRole).where(ModelRole.scope == scope, col(ModelRole.run).in_(runs))
    ).all()
    return sorted(rows, key=lambda r: (r.run, r.role, r.model))
