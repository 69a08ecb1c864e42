"""The disposition judge's model roles: classifier, grader and awareness judge of each arm.

One judge model classifies every arm's answers (and grades or rates a share of them). An
arm whose model is that judge would be graded by itself: refused in one sentence unless
``--allow-self-judging`` (:mod:`llm.roles`). The assignments are stored per arm (run
``<study>:<arm>``, scope ``disposition``) and printed in the study's report.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session

from llm.roles import RoleAssignment, check_role, record_roles, role_lines
from storage.models import DispositionArm
from study.disposition.plugin import PLUGIN


def arm_run(study: str, arm: str) -> str:
    """The run name an arm's roles are stored under."""
    return f"{study}:{arm}"


def judge_roles(
    study: str,
    arms: Sequence[DispositionArm],
    judge: str,
    *,
    roles: Sequence[str],
    session: Session,
    allow_self: bool,
) -> list[RoleAssignment]:
    """Check ``judge`` playing ``roles`` on every arm's answers and store the assignments.

    Every arm is checked before any is stored, so a refusal stores nothing.

    Raises:
        InputError: An arm's model is the judge and ``allow_self`` is false.
    """
    checked = [
        (
            arm,
            [
                check_role(
                    role,
                    judge,
                    arm.model,
                    allow_self=allow_self,
                    where=f"arm {arm.name!r} of study {study!r}",
                )
                for role in roles
            ],
        )
        for arm in arms
    ]
    out: list[RoleAssignment] = []
    for arm, got in checked:
        record_roles(PLUGIN.name, arm_run(study, arm.name), got, session=session)
        out += got
    session.commit()
    return out


def study_role_lines(study: str, arms: Sequence[DispositionArm], *, session: Session) -> list[str]:
    """The report's role lines: one per arm of the study."""
    return role_lines(PLUGIN.name, [arm_run(study, a.name) for a in arms], session=session)
