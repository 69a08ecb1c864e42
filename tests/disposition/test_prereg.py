"""Pre-registration: plan parsing (line-numbered errors), scorecard, exploratory marks."""

from __future__ import annotations

import pandas as pd
import pytest

from storage.errors import InputError
from study.disposition.prereg import demo_plan, parse_plan, plan_status, scorecard


def _drift() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "battery": ["si", "si", "si", "ov"],
            "arm": ["ref", "a", "b", "a"],
            "reference": ["ref"] * 4,
            "drift_pp": [0.0, -10.0, -1.0, -3.0],
        }
    )


def test_scorecard_and_exploratory_marks() -> None:
    plan = parse_plan(
        "study: s\nbound_pp: 4\nprimary:\n  - {battery: si, arm: a}\npredictions:\n"
        "  - {battery: si, arm: a, low: -12, high: -8}\n"
        "  - {battery: si, arm: b, low: -8, high: -2}\n"
        "  - {battery: xx, arm: a, low: 0, high: 1}\n",
        source="p.yaml",
    )
    card = scorecard(_drift(), plan)
    assert list(card["verdict"]) == ["inside", "OUTSIDE", "not measured"]
    assert plan_status(_drift(), plan) == ["reference", "primary", "predicted", "exploratory"]
    assert plan_status(_drift(), None) == ["reference", "exploratory", "exploratory", "exploratory"]


def test_plan_errors_name_file_and_line() -> None:
    with pytest.raises(InputError, match=r"p\.yaml line 4"):
        parse_plan(
            "study: s\npredictions:\n  - {battery: si, arm: a, low: 1, high: 2}\n"
            "  - {battery: si, arm: b, low: 3, high: -2}\n",
            source="p.yaml",
        )
    with pytest.raises(InputError, match=r"p\.yaml line 1"):
        parse_plan("- a\n", source="p.yaml")


def test_demo_plan_names_the_demo_arms() -> None:
    from study.disposition.demo import DEMO_STUDY, demo_arms

    plan = demo_plan()
    assert plan.study == DEMO_STUDY
    names = {a.name for a in demo_arms()}
    assert {arm for _, arm in plan.registered()} <= names
