"""Fast version of bench/calibration.py: coverage and false positives on simulated studies.

60 studies with B = 1,000 cannot pin coverage to 93-97% (Monte Carlo SE ~2.8 points per
condition), so the bounds are loose; they still catch a broken interval (e.g. one that
forgets to re-estimate the floor, or a p-value on the wrong side). The full check with 500
studies per scenario is ``python bench/calibration.py`` (numbers in docs/calibration.md).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

_path = Path(__file__).resolve().parents[2] / "bench" / "calibration.py"
_spec = importlib.util.spec_from_file_location("driftlens_bench_calibration", _path)
assert _spec is not None and _spec.loader is not None
calibration = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = calibration  # dataclasses resolve their module while defined
_spec.loader.exec_module(calibration)


def test_fast_calibration() -> None:
    rates = calibration.run_scenario("main", studies=60, bootstrap=1000, seed=11)
    effects = [n for n in rates if n != "none"]
    coverage = np.mean([rates[n]["coverage"] for n in effects])
    assert 0.90 <= coverage <= 0.99
    assert all(rates[n]["coverage"] >= 0.83 for n in effects)
    null_fpr = np.mean([rates[n]["significant_raw"] for n in calibration.NULL_CONDITIONS])
    assert null_fpr <= 0.10
    assert rates["life_event"]["significant_bh"] == 1.0  # d_rel = 1 with 60 questions
    assert rates["medium"]["significant_raw"] >= 0.8
