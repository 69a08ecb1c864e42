"""Specificity judged with an equivalence margin (driftlens_core/validity.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from driftlens_core.analysis import analyze_table
from driftlens_core.validity import SPECIFICITY_MARGIN
from tests.stats.sim import simulate_table


def _noise_effect_table(effect_sd: float, n_questions: int = 1000) -> object:
    df, _ = simulate_table(
        np.random.default_rng(11),
        n_questions=n_questions,
        attributes={"filler_x": effect_sd},
        n_noise=3,
    )
    df.loc[df["condition"] == "filler_x", "condition_class"] = "noise"
    return df


def _specificity(effect_sd: float, margin: float = SPECIFICITY_MARGIN) -> dict[str, Any]:
    res = analyze_table(_noise_effect_table(effect_sd), bootstrap=2000, seed=5, margin=margin)
    out = res.to_dict()["models"]
    (model,) = out.values()
    spec: dict[str, Any] = model["metrics"]["dtw"]["validity"]["specificity"]
    return spec


def test_negligible_noise_effect_passes_at_scale() -> None:
    spec = _specificity(0.04)
    assert spec["passed"] is True, spec
    assert "margin ±0.2" in str(spec["detail"]) and "p = " in str(spec["detail"])


def test_large_noise_effect_fails() -> None:
    spec = _specificity(0.5)
    assert spec["passed"] is False and "filler_x" in spec["failing"], spec


def test_a_tight_margin_makes_it_inconclusive() -> None:
    spec = _specificity(0.04, margin=0.01)
    assert spec["passed"] is None and "inconclusive" in str(spec["detail"]), spec
