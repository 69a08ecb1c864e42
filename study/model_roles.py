"""Model roles: the model under test is not its own judge, labeler or classifier by default.

A study names the model under test (the one whose answers are studied) and the models that
play the other roles (judge, labeler, classifier). A role played by the model under test
would grade its own answers; :func:`assign_role` refuses that in one sentence unless the
caller allows it (``--allow-self-judging``). The simulator is exempt: its judge, labeler and
classifier answers follow fixed rules of their own (``llm.sim.tasks``), not the generating
preset's, so ``sim/default`` judging ``sim/default`` grades nothing of its own. It returns
what is stored with every verdict and printed in reports (:data:`ROLE_KEYS` in the
verdict's settings, so :mod:`study.judge_settings` prints them in every report's
provenance).
"""

from __future__ import annotations

from typing import Any

from llm.specs import parse_spec, spec_simulated
from storage.errors import InputError

#: The keys :func:`assign_role` adds to a verdict's settings.
ROLE_KEYS: tuple[str, ...] = ("model_under_test", "self_judging")


def _normal(spec: str) -> str:
    try:
        return parse_spec(spec).spec
    except Exception:  # a stored spec from an older format: compare it as written
        return spec.strip()


def assign_role(
    role: str, model: str, under_test: str | None, *, allow_self: bool, where: str
) -> dict[str, Any]:
    """Check one role assignment and return what is stored with the role's verdicts.

    Args:
        role: The role, as a user reads it (``judge``, ``labeler``, ``classifier``).
        model: The spec playing the role.
        under_test: The spec of the model under test (``None``: not known).
        allow_self: Whether the model under test may play the role.
        where: What is judged, for the sentence (``run 'gemma5'``).

    Returns:
        ``{"model_under_test": ..., "self_judging": bool}``.

    Raises:
        InputError: The model plays a role on its own answers, ``allow_self`` is false and
            the model is not the simulator.
    """
    same = under_test is not None and _normal(model) == _normal(under_test)
    if same and not allow_self and not spec_simulated(model):
        raise InputError(
            f"The {role} {_normal(model)} is the model under test in {where}, so it would "
            "grade its own answers; choose another model, or pass --allow-self-judging."
        )
    return {"model_under_test": under_test, "self_judging": same}
