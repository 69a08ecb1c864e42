"""Disposition noise shares: the probe main effect is split out of between-stem (#23 6)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from driftlens_core.rates import rate_noise


def test_probe_main_effect_is_split_out_and_the_paired_shares_leave_it_out() -> None:
    rng = np.random.default_rng(4)
    n_probe, n_arm, n_sample = 60, 3, 2
    level = np.where(np.arange(n_probe) % 2 == 0, 0.9, 0.1)  # a probe's own level, every arm
    probe, arm, sample, y = [], [], [], []
    for p in range(n_probe):
        for a in range(n_arm):
            for s in range(n_sample):
                probe.append(p)
                arm.append(a)
                sample.append(s)
                y.append(float(rng.random() < level[p]))
    noise = rate_noise(np.array(y), np.array(probe), np.array(arm), np.array(sample))
    # between-stem is the sum of its two parts
    assert noise.probe_main + noise.probe_by_arm == pytest.approx(noise.between_stem, abs=1e-12)
    # here the probes differ in level only: that part dominates, the interaction is small
    assert noise.probe_main > 0.5 > noise.probe_by_arm
    # a paired drift does not feel the probe main effect: its shares sum to 1 without it
    paired = (noise.paired_classifier, noise.paired_model, noise.paired_probe_by_arm)
    assert np.isnan(paired[0])  # no classifier repeats in this table
    assert np.nansum(paired) == pytest.approx(1.0)
    assert noise.paired_model > noise.model


def _bench() -> Any:
    path = Path(__file__).resolve().parents[2] / "bench" / "disposition_calibration.py"
    spec = importlib.util.spec_from_file_location("driftlens_bench_disposition", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seed_like_noise_shares_split_the_probe_levels_and_follow_the_classifier() -> None:
    # disp-qwen on the demo's reasoning-on arms, 10 % of responses scored again: the
    # probes' own levels are most of between-stem, a paired drift's shares leave them out
    # (so its classifier share is larger), and the classifier share follows its flip rate
    bench = _bench()
    exact = bench.noise_shares(6, 30, seed=3, flip=0.0)["median"]
    noisy = bench.noise_shares(6, 30, seed=3)["median"]  # the preset's 1.5 % flips
    assert exact["classifier"] < 0.01
    assert noisy["classifier"] > 0.05
    assert noisy["paired_classifier"] > noisy["classifier"]
    assert noisy["probe_main"] > noisy["probe_by_arm"]
    assert exact["paired_model"] > exact["model"]
