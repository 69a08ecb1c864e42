"""Lexical diversity, format reward and drift rewards (SPEC §10) by hand."""

from __future__ import annotations

import math

import pytest

from driftlens_core.rewards import (
    dtw_reward,
    format_reward,
    grpo_reward,
    lexical_diversity,
    sri_reward,
)


def _sig(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_lexical_diversity_examples() -> None:
    # 6 tokens, 5 unique -> D = 5/6, L = 1
    assert lexical_diversity("The cat sat on the mat.") == pytest.approx(_sig(8 * (5 / 6 - 0.2)))
    # 2 tokens, both unique -> D = 1, L = 2/5
    assert lexical_diversity("Hello world") == pytest.approx(_sig(8 * (0.4 - 0.2)))
    # repetition: 5 tokens, 1 unique -> D = 0.2, L = 1 -> sigmoid(0) = 0.5
    assert lexical_diversity("yes yes YES Yes yes") == pytest.approx(0.5)
    # digits and punctuation are not tokens
    assert lexical_diversity("Buy 3 apples, 4 pears!") == pytest.approx(_sig(8 * (1 * 3 / 5 - 0.2)))
    assert lexical_diversity(None) == 0.0
    assert lexical_diversity("") == 0.0
    assert lexical_diversity("   ") == 0.0
    assert lexical_diversity("42 !!") == 0.0


def test_format_reward_examples() -> None:
    assert format_reward(["Check the budget", "Book the venue"], "Do both.") == 1.0
    assert format_reward(["Check the budget", "x"], "Do both.") == 0.5  # shortest step < 2 chars
    assert format_reward(["Check", "  ", ""], None) == 0.75  # blank steps ignored, no answer
    assert format_reward([], "answer") == 0.25
    assert format_reward(None, None) == 0.0
    assert format_reward(["ok"], "  ") == 0.75


def test_drift_rewards_use_metrics() -> None:
    from driftlens_core.metrics import dtw_distance, sri

    a, b = [1, 2, 3, 3], [1, 3, 3]
    assert dtw_reward(a, b) == pytest.approx(-dtw_distance(a, b))
    assert sri_reward(a, b) == pytest.approx(-sri(a, b, alpha=0.5))
    assert dtw_reward(a, a) == 0.0
    total = grpo_reward(["step one", "step two"], "done", a, b)
    assert total == pytest.approx(1.0 - dtw_distance(a, b) - sri(a, b))
