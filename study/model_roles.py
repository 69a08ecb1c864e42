"""Model roles of a study's runs: the generic run's check, and the report's section.

The check and the storage are :mod:`llm.roles` (the ontology rounds use them too); this
module adds what the instruments share above it: :func:`run_role` checks a role against a
generation run's model (reasoning and conflicts runs are generation runs) and
:func:`roles_sections` renders :func:`llm.roles.role_lines` as a report's HTML and Markdown
section.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session

from llm.roles import (
    GENERATION,
    ROLE_KEYS,
    RoleAssignment,
    assign_role,
    check_role,
    record_roles,
    role_lines,
)
from storage.models import ModelSpecRow
from storage.repo.runs import require_run

__all__ = [
    "GENERATION",
    "ROLE_KEYS",
    "RoleAssignment",
    "assign_role",
    "check_role",
    "record_roles",
    "role_lines",
    "roles_sections",
    "run_role",
]


def run_role(
    role: str, model: str, run_name: str, *, session: Session, allow_self: bool
) -> RoleAssignment:
    """Check ``model`` playing ``role`` on generation run ``run_name``'s answers.

    Raises:
        NotFoundError: No run of that name.
        InputError: The model generated the run and ``allow_self`` is false.
    """
    run = require_run(run_name, session=session)
    under_test = session.get(ModelSpecRow, run.model_spec_id)
    return check_role(
        role,
        model,
        under_test.spec if under_test is not None else None,
        allow_self=allow_self,
        where=f"run {run_name!r}",
    )


def roles_sections(lines: Sequence[str]) -> tuple[list[str], list[str]]:
    """A report's "Model roles" section as HTML parts and Markdown parts."""
    from study.report.html import esc
    from study.report.markdown import md_escape

    title = "Model roles"
    html = [f"<h2>{title}</h2>", "<ul>", *(f"<li>{esc(x)}</li>" for x in lines), "</ul>"]
    md = [f"## {title}\n", *(f"- {md_escape(x)}" for x in lines), ""]
    return html, md
