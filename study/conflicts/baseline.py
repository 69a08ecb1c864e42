"""The no-memory baseline: what a rubric score means against the model with no memory.

A run of the ``no-memory`` track asks the same requests with an empty bank and is judged
by the same rubric; D1/D2 do not apply (there is no conflict to perceive), D3–D5 do. Per
judge, each of D3, D4, D5 and their sum is compared on the instances both runs answered:
the mean with memory, the mean without, and the paired difference (with − without) with
its instance-cluster interval (:func:`driftlens_core.rubric.paired_effect`). A rubric score
no higher than the no-memory one says the memory bank did not help the answer.

Sums follow the rubric's not-applicable rule (:func:`study.conflicts.actions.rubric_total`):
an abstention has no D3, so its D3–D5 sum is 3 × the mean of D4 and D5, and the D3 row
averages the answers that made a recommendation. The last measure is the **abstention
rate** (answers that ask, check or decline instead of advising, among those with a known
action class): a bank that makes the model abstain more, or less, than it does with no
memory at all is a finding of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from driftlens_core.rubric import paired_effect
from study.conflicts.actions import rubric_total

#: The measure label of the abstention rate (share 0–1).
ABSTENTION_MEASURE = "abstention rate"

MEASURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("D3 calibration", ("d3",)),
    ("D4 clarification", ("d4",)),
    ("D5 faithfulness", ("d5",)),
    ("D3-D5 sum", ("d3", "d4", "d5")),
    (ABSTENTION_MEASURE, ("abstain",)),
)


def baseline_rows(
    memory: pd.DataFrame, empty: pd.DataFrame, *, bootstrap: int, seed: int
) -> list[dict[str, Any]]:
    """One row per judge × model × measure (see the module docstring).

    A model answered both with memory and without is compared with itself; when no model
    is in both tables (another model's no-memory run), the models are pooled (``all``).

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
    models = sorted(set(memory["model"]) & set(empty["model"])) or ["all"]
    for judge, model in (
        (j, m) for j in sorted(set(memory["judge"]) & set(empty["judge"])) for m in models
    ):
        a = memory[memory["judge"] == judge]
        b = empty[empty["judge"] == judge]
        if model != "all":
            a, b = a[a["model"] == model], b[b["model"] == model]
        for label, dims in MEASURES:
            if not all(d in a.columns and d in b.columns for d in dims):
                continue
            ma = a.assign(v=rubric_total(a[list(dims)].to_numpy(dtype=float), required=()))
            mb = b.assign(v=rubric_total(b[list(dims)].to_numpy(dtype=float), required=()))
            pa = ma.groupby("instance_id")["v"].mean()
            pb = mb.groupby("instance_id")["v"].mean()
            paired = (pa - pb).dropna()  # instances both runs have a value for
            if paired.empty and label == ABSTENTION_MEASURE:
                continue  # one side carries no action class: not assessed
            both = paired.index
            diff = paired.to_numpy(dtype=float)
            eff = paired_effect(np.asarray(both), diff, n_boot=bootstrap, seed=rng)
            rows.append(
                {
                    "judge": judge,
                    "model": model,
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
