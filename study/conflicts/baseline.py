"""The no-memory baseline: what a rubric score means against the model with no memory.

A run of the ``no-memory`` track asks the same requests with an empty bank and is judged
by the same rubric; D1/D2 do not apply (there is no conflict to perceive), D3–D5 do. Per
judge, each of D3, D4, D5 and their sum is compared on the instances both runs answered:
the mean with memory, the mean without, and the paired difference (with − without) with
its instance-cluster interval (:func:`driftlens_core.rubric.paired_effect`). A rubric score
no higher than the no-memory one says the memory bank did not help the answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from driftlens_core.rubric import paired_effect

MEASURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("D3 calibration", ("d3",)),
    ("D4 clarification", ("d4",)),
    ("D5 faithfulness", ("d5",)),
    ("D3-D5 sum", ("d3", "d4", "d5")),
)


def baseline_rows(
    memory: pd.DataFrame, empty: pd.DataFrame, *, bootstrap: int, seed: int
) -> list[dict[str, Any]]:
    """One row per judge × measure (see the module docstring).

    Args:
        memory: The score table of the runs with memory (largest dose used).
        empty: The score table of the no-memory runs.
        bootstrap: Replicates.
        seed: Seed.
    """
    rng = np.random.default_rng(seed)
    if memory.empty or empty.empty:
        return []
    top = memory["distractors"].max()
    memory = memory[memory["distractors"] == top]
    rows: list[dict[str, Any]] = []
    for judge in sorted(set(memory["judge"]) & set(empty["judge"])):
        a = memory[memory["judge"] == judge]
        b = empty[empty["judge"] == judge]
        for label, dims in MEASURES:
            ma = a.assign(v=a[list(dims)].sum(axis=1, min_count=len(dims)))
            mb = b.assign(v=b[list(dims)].sum(axis=1, min_count=len(dims)))
            pa = ma.groupby("instance_id")["v"].mean()
            pb = mb.groupby("instance_id")["v"].mean()
            paired = (pa - pb).dropna()  # instances both runs have a value for
            both = paired.index
            diff = paired.to_numpy(dtype=float)
            eff = paired_effect(np.asarray(both), diff, n_boot=bootstrap, seed=rng)
            rows.append(
                {
                    "judge": judge,
                    "measure": label,
                    "with_memory": float(pa[both].mean()) if len(both) else float("nan"),
                    "no_memory": float(pb[both].mean()) if len(both) else float("nan"),
                    "difference": eff.mean_diff,
                    "ci_low": eff.ci_low,
                    "ci_high": eff.ci_high,
                    "n_instances": len(both),
                }
            )
    return rows
