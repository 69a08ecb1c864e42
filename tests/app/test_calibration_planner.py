"""The calibration planner panel's table (instrument pages, issue 35 item 3)."""

from __future__ import annotations

from typing import Any

from app.ui.calibration_planner import planner_frame
from driftlens_core.ppi import humans_for_half_width


def test_planner_rows_follow_the_plan_rule_and_skip_rows_without_a_pilot() -> None:
    rows: list[dict[str, Any]] = [
        {"label": "A d2", "rectifier_sd": 0.8, "model_sd": 1.2, "lam": 0.7, "n_items": 420,
         "n_human": 21},
        {"label": "A effect", "rectifier_sd": None, "model_sd": None, "lam": 0.5,
         "n_items": 800, "n_human": 30},
        {"label": "B d2", "rectifier_sd": 2.0, "model_sd": 1.0, "lam": 0.9, "n_items": 50,
         "n_human": 20},
    ]  # fmt: skip
    frame = planner_frame(rows, 0.2)
    assert list(frame["what"]) == ["A d2", "B d2"]
    need = humans_for_half_width(rectifier_sd=0.8, model_sd=1.2, n_items=420, lam=0.7,
                                 half_width=0.2)  # fmt: skip
    assert frame.iloc[0]["humans needed"] == str(need) and need is not None and need > 21
    assert frame.iloc[1]["humans needed"] == "unreachable"  # 50 items cannot give ±0.2
