"""Model roles (issue 36): the model under test does not judge its own answers by default."""

from __future__ import annotations

import pytest

from storage.errors import InputError
from study.model_roles import assign_role


def test_self_judging_is_refused_in_one_line_unless_allowed() -> None:
    gemma = "openai-api/gemma/gemma-3-270m"
    with pytest.raises(InputError) as err:
        assign_role("judge", gemma, gemma, allow_self=False, where="run 'r'")
    message = str(err.value)
    assert "\n" not in message and "--allow-self-judging" in message and gemma in message
    assert assign_role("judge", gemma, gemma, allow_self=True, where="run 'r'") == {
        "model_under_test": gemma,
        "self_judging": True,
    }
    other = assign_role("judge", "openai/gpt-4o-mini", gemma, allow_self=False, where="x")
    assert other == {"model_under_test": gemma, "self_judging": False}


def test_the_simulator_judging_its_own_run_is_allowed_and_recorded() -> None:
    roles = assign_role("judge", "sim/default", "sim/default", allow_self=False, where="x")
    assert roles["self_judging"] is True
