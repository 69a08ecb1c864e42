"""The GRPO rewards example in docs/rewards.md runs and gives the documented numbers."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from driftlens_core.rewards import format_reward, lexical_diversity

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "rewards_example.py"


def test_example_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("reference (baseline) symbols: [")
    assert lines[1].split() == ["response", "format", "lexdiv", "-DTW", "-SRI", "GRPO"]
    assert lines[-1].startswith("GRPO reward batch: [")


def test_example_values() -> None:
    results = runpy.run_path(str(EXAMPLE))["main"]()
    base, noise, event = results["baseline"], results["noise (' ')"], results["life event"]
    assert base["format"] == 1.0 and base["dtw"] == 0.0 and base["sri"] == 0.0
    assert base["grpo"] == pytest.approx(1.0)
    # A life event moves the trajectory: negative drift rewards, lower GRPO reward.
    assert event["dtw"] < noise["dtw"] <= 0.0 and event["sri"] < 0.0
    assert event["grpo"] == pytest.approx(event["format"] + event["dtw"] + event["sri"])
    assert event["grpo"] < base["grpo"]


def test_documented_reward_definitions() -> None:
    # docs/rewards.md states these values; keep the page honest.
    assert format_reward(["Weigh cost.", "Decide."], "Buy.") == 1.0
    assert format_reward(["x"], "Buy.") == 0.5
    assert format_reward([], "Buy.") == 0.25
    assert format_reward([" "], None) == 0.0
    assert lexical_diversity(None) == 0.0 and lexical_diversity("42!") == 0.0
    assert lexical_diversity("one two three four five") == pytest.approx(0.99834, abs=1e-5)
