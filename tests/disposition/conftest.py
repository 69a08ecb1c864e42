"""Fixtures of the disposition tests: simulated rate tables written as CSV."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from study.disposition.sim.model import DISPOSITION_PRESETS, ArmSetting, simulate_table


def sim_frame(
    seed: int,
    arms: Sequence[tuple[str, ArmSetting]],
    *,
    batteries: Sequence[str] = ("self_interest", "oversight"),
    n_stems: int = 30,
    preset: str = "disp-qwen",
) -> pd.DataFrame:
    """A rate table as ``driftlens disposition stats`` reads it (strings, empty = missing)."""
    rng = np.random.default_rng(seed)
    frames = []
    for battery in batteries:
        t = simulate_table(
            DISPOSITION_PRESETS[preset], battery, [s for _, s in arms], n_stems=n_stems, rng=rng
        )
        frames.append(
            pd.DataFrame(
                {
                    "battery": battery,
                    "stem": [f"{battery[:2]}-{k:02d}" for k in t.stem],
                    "probe": [f"p{k % 6}" for k in t.probe],
                    "arm": [arms[k][0] for k in t.arm],
                    "sample": t.sample + 1,
                    "aligned": t.aligned.astype(int).astype(str),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
