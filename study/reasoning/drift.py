"""Build the drift table: every response's trajectory against its question's baseline.

Pairing rule (documented because the statistics depend on it): for each model and
question the reference is the baseline trajectory of sample 0. Every perturbed sample is
compared with it, and every further baseline sample (1, 2, …) is compared with it too;
those baseline-vs-baseline rows get class ``none`` and form the null distribution of
SPEC §7–§8 (pure model-sampling noise). Each perturbed row therefore carries exactly one
draw of sampling noise, like the null rows, so the two are comparable.

Responses without a usable trajectory (request failed, no steps parsed) are not dropped
silently: they are counted in :class:`DriftTable.skipped` with the reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from driftlens_core import pair_drift
from storage.models import BASELINE_CONDITION

DRIFT_COLUMNS = (
    "model",
    "question_id",
    "condition",
    "condition_class",
    "sample",
    "n_base",
    "n_other",
    "dtw",
    "sri",
    "levenshtein",
    "jsd",
)


@dataclass(frozen=True)
class Trajectory:
    """One response reduced to what drift needs: its keys and symbol sequence."""

    model: str
    question_id: str
    condition: str
    condition_class: str
    sample: int
    symbols: tuple[int, ...]
    usable: bool = True
    reason: str = ""


@dataclass(frozen=True)
class DriftTable:
    """The drift rows plus an account of what could not be compared and why."""

    rows: pd.DataFrame
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def n_pairs(self) -> int:
        """Number of compared pairs."""
        return len(self.rows)


def build_drift_table(trajectories: Iterable[Trajectory], *, alpha: float = 0.5) -> DriftTable:
    """Compare every trajectory with its question's baseline (sample 0) in one batch.

    Args:
        trajectories: labeled responses of one or more models.
        alpha: SRI weight of the sequence term (SPEC §6: 0.5).

    Returns:
        The drift table (columns :data:`DRIFT_COLUMNS`) and the skip counts.
    """
    skipped: Counter[str] = Counter()
    items = list(trajectories)
    reference: dict[tuple[str, str], Trajectory] = {}
    for t in items:
        if t.condition == BASELINE_CONDITION and t.sample == 0 and t.usable:
            reference[(t.model, t.question_id)] = t
    base_seqs: list[Sequence[int]] = []
    other_seqs: list[Sequence[int]] = []
    keys: list[Trajectory] = []
    for t in items:
        if t.condition == BASELINE_CONDITION and t.sample == 0:
            continue
        if not t.usable:
            skipped[t.reason or "unusable"] += 1
            continue
        ref = reference.get((t.model, t.question_id))
        if ref is None:
            skipped["no_baseline"] += 1
            continue
        base_seqs.append(ref.symbols)
        other_seqs.append(t.symbols)
        keys.append(t)
    if not keys:
        return DriftTable(rows=pd.DataFrame(columns=list(DRIFT_COLUMNS)), skipped=dict(skipped))
    drift = pair_drift(base_seqs, other_seqs, alpha=alpha)
    rows = pd.DataFrame(
        {
            "model": [k.model for k in keys],
            "question_id": [k.question_id for k in keys],
            "condition": [k.condition for k in keys],
            "condition_class": [
                "none" if k.condition == BASELINE_CONDITION else k.condition_class for k in keys
            ],
            "sample": np.array([k.sample for k in keys], dtype=np.int64),
            "n_base": np.array([len(s) for s in base_seqs], dtype=np.int64),
            "n_other": np.array([len(s) for s in other_seqs], dtype=np.int64),
            "dtw": np.asarray(drift.dtw, dtype=np.float64),
            "sri": np.asarray(drift.sri, dtype=np.float64),
            "levenshtein": np.asarray(drift.levenshtein, dtype=np.float64),
            "jsd": np.asarray(drift.jsd, dtype=np.float64),
        }
    )
    return DriftTable(rows=rows, skipped=dict(skipped))
