"""Model roles: the model under test is not its own judge, labeler or classifier by default.

A study names the model under test (the one whose answers are studied) and the models that
play the other roles (judge, labeler, classifier, awareness judge, claim writer). A grading
role played by the model under test would grade its own answers: :func:`assign_role`
refuses that in one sentence unless the caller allows it (``--allow-self-judging``). The
simulator is exempt: its judge, labeler and classifier answers follow fixed rules of their
own (``llm.sim.tasks``), not the generating preset's, so ``sim/default`` judging
``sim/default`` grades nothing of its own.

Every assignment is stored with the run (:func:`record_roles`, table ``model_role``) and
every instrument's report prints :func:`role_lines` of its runs. The scope is named by
the caller: :data:`GENERATION` for generation runs (whichever instrument made them), else
the instrument's plugin name; this module names none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from llm.specs import parse_spec, spec_simulated
from storage.errors import InputError

#: The command-line flag that allows a grading role played by the model under test (every
#: command that grades takes it; a page or a job adds it to the argv it starts).
SELF_JUDGING_FLAG = "--allow-self-judging"

#: The keys :meth:`RoleAssignment.settings` returns (stored with a verdict's settings).
ROLE_KEYS: tuple[str, ...] = ("model_under_test", "self_judging")
#: The scope of a role stored with a generation run (the runs of ``driftlens generate`` and
#: of every instrument that stores its answers as a generation run).
GENERATION = "generation"
#: Roles that grade the model under test's answers: refused on itself unless allowed.
GRADING_ROLES: frozenset[str] = frozenset(
    {"judge", "labeler", "classifier", "grader", "awareness judge"}
)


@dataclass(frozen=True)
class RoleAssignment:
    """One model playing one role on the answers of a model under test.

    Attributes:
        role: ``judge``, ``labeler``, ``classifier``, ``grader``, ``awareness judge`` or
            ``claim writer``.
        model: The spec playing the role.
        model_under_test: The spec whose answers are graded (``None``: not known).
        self_judging: Whether the two are the same model.
    """

    role: str
    model: str
    model_under_test: str | None
    self_judging: bool

    def settings(self) -> dict[str, Any]:
        """``{"model_under_test": ..., "self_judging": ...}`` (the reasoning judge's
        verdict settings carry them)."""
        return {"model_under_test": self.model_under_test, "self_judging": self.self_judging}

    def line(self) -> str:
        """One plain line: ``judge M (model under test U, self-judging allowed)``."""
        tail = f"model under test {self.model_under_test or 'unknown'}"
        if self.self_judging:
            tail += ", self-judging allowed"
        return f"{self.role} {self.model} ({tail})"


def normal_spec(spec: str) -> str:
    """A spec in its canonical form (as written when it does not parse)."""
    try:
        return parse_spec(spec).spec
    except Exception:  # a stored spec from an older format: compare it as written
        return spec.strip()


def check_role(
    role: str, model: str, under_test: str | None, *, allow_self: bool, where: str
) -> RoleAssignment:
    """Check one role assignment.

    Args:
        role: The role, as a user reads it (``judge``, ``labeler``, ``classifier``).
        model: The spec playing the role.
        under_test: The spec of the model under test (``None``: not known).
        allow_self: Whether the model under test may play the role.
        where: What is judged, for the sentence (``run 'gemma5'``).

    Returns:
        The assignment (``self_judging`` true when the two are the same model).

    Raises:
        InputError: A grading role played by the model under test on its own answers,
            ``allow_self`` false and the model not the simulator.
    """
    same = under_test is not None and normal_spec(model) == normal_spec(under_test)
    if same and role in GRADING_ROLES and not allow_self and not spec_simulated(model):
        raise InputError(
            f"The {role} {normal_spec(model)} is the model under test in {where}, so it would "
            f"grade its own answers; choose another model, or pass {SELF_JUDGING_FLAG}."
        )
    return RoleAssignment(
        role=role,
        model=normal_spec(model),
        model_under_test=None if under_test is None else normal_spec(under_test),
        self_judging=same,
    )


def assign_role(
    role: str, model: str, under_test: str | None, *, allow_self: bool, where: str
) -> dict[str, Any]:
    """:func:`check_role` as the settings stored with every verdict.

    Returns:
        ``{"model_under_test": ..., "self_judging": bool}``.
    """
    return check_role(role, model, under_test, allow_self=allow_self, where=where).settings()


def record_roles(
    scope: str, run: str, roles: Iterable[RoleAssignment], *, session: Session
) -> None:
    """Store the assignments with ``run`` of ``scope`` (see the module); no commit."""
    from storage.models import ModelRole
    from storage.repo.model_roles import record_role

    for r in roles:
        row = ModelRole(
            scope=scope,
            run=run,
            role=r.role,
            model=r.model,
            model_under_test=r.model_under_test,
            self_judging=r.self_judging,
        )
        record_role(row, session=session)


def stored_roles(
    scope: str, runs: Sequence[str], *, session: Session
) -> list[tuple[str, RoleAssignment]]:
    """``(run, assignment)`` of every role stored with ``runs``, by run, role and model."""
    from storage.repo.model_roles import roles_of

    return [
        (
            r.run,
            RoleAssignment(
                role=r.role,
                model=r.model,
                model_under_test=r.model_under_test,
                self_judging=r.self_judging,
            ),
        )
        for r in roles_of(scope, runs, session=session)
    ]


def role_lines(scope: str, runs: Sequence[str], *, session: Session) -> list[str]:
    """The lines every report prints: ``Roles in run R: judge M (model under test U).``

    A run with no stored role says so (``no model role recorded``), so a report never
    leaves the question open.
    """
    by_run: dict[str, list[RoleAssignment]] = {}
    for run, a in stored_roles(scope, runs, session=session):
        by_run.setdefault(run, []).append(a)
    out = []
    for run in dict.fromkeys(runs):
        got = by_run.get(run)
        if got:
            out.append(f"Roles in run {run}: " + "; ".join(a.line() for a in got) + ".")
        else:
            out.append(f"Roles in run {run}: no model role recorded.")
    return out
