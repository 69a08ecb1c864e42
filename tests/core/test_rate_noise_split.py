"""Disposition noise shares: the probe main effect is split out of between-stem (#23 6)."""

from __future__ import annotations

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
