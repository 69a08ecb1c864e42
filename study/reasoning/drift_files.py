"""The drift table as files: ``drift.csv`` (the statistics input) and ``pairs.csv``.

The unit of a condition
-----------------------
Responses carry the perturbation *key* (``attribute/age/3``: the third age stimulus). The
statistics run per *category* (``attribute/age``): the stimuli of a category are variants
of one condition, not independent conditions, and the question stays the cluster of the
bootstrap, so variants of one question are never counted as independent evidence
(SPEC §8). Every stimulus row is kept (the engine averages within a question where the
design needs it); the stimulus key stays in ``pairs.csv`` (row for row the same order as
``drift.csv``, with the category in a ``category`` column) and in ``drift.csv``'s
``variant`` column, which keeps two stimuli of one question and sample from being
repeated rows (``driftlens stats`` refuses those; tables written before the column
existed still read). Baseline rows
(resampled baselines against baseline sample 0, class ``none``) keep the condition
``baseline``.

Matching ``driftlens stats``
----------------------------
The drift table is written first as ``drift.csv`` in the format ``driftlens stats``
reads (question_id, condition, variant, condition_class, model, sample, the metric columns
``dtw`` and ``sri``; the ``n_*`` trajectory lengths are bookkeeping, not metrics). The
statistics are then computed from that very file through the same three calls the
``stats`` command makes (:func:`study.reasoning.stats_table.read_stats_csv`,
:func:`study.reasoning.stats_table.stats_input`,
:func:`driftlens_core.analysis.analyze_table`), with the same ``B`` and seed, so
``stats.json`` is identical to ``driftlens stats DIR/drift.csv --bootstrap B --seed S``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from driftlens_core.analysis import analyze_table
from storage.models import BASELINE_CONDITION
from study.reasoning.stats_table import read_stats_csv, stats_input

#: Metrics written to ``drift.csv`` and analysed.
METRICS: tuple[str, ...] = ("dtw", "sri")
#: Columns of ``drift.csv`` in order.
DRIFT_CSV_COLUMNS: tuple[str, ...] = (
    "model", "question_id", "condition", "variant", "condition_class", "sample",
    "n_base", "n_other", *METRICS,
)  # fmt: skip
#: Order in which example pairs are chosen (the strongest expected drift first).


def condition_category(key: str) -> str:
    """The condition a perturbation key belongs to: ``class/category/n`` → ``class/category``.

    ``baseline`` and keys without a stimulus number are their own condition.
    """
    if key == BASELINE_CONDITION:
        return key
    parts = key.split("/")
    return "/".join(parts[:2]) if len(parts) >= 3 else key


def pair_frame(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pair table with a ``category`` column, in the row order of ``drift.csv``.

    ``condition`` keeps the perturbation key; rows are sorted so files are reproducible.
    """
    df = pairs.assign(category=pairs["condition"].astype(str).map(condition_category))
    df = df.sort_values(["model", "question_id", "category", "condition", "sample"], kind="stable")
    return df.reset_index(drop=True)


def stats_frame(pairs: pd.DataFrame) -> pd.DataFrame:
    """Turn the pair table into ``drift.csv`` rows.

    The pair table comes from :func:`study.reasoning.drift.build_drift_table`.

    ``condition`` becomes the perturbation's category (see the module docstring); only the
    columns ``driftlens stats`` reads are kept, in the row order of :func:`pair_frame`.
    """
    df = pair_frame(pairs)
    # the stimulus key tells the rows of one question, category and sample apart
    df["variant"] = df["condition"].astype(str)
    df["condition"] = df["category"]
    return df.loc[:, list(DRIFT_CSV_COLUMNS)]


def compute_stats(drift_csv: Path, *, bootstrap: int, seed: int) -> dict[str, Any]:
    """Run the statistics on a drift CSV exactly as ``driftlens stats`` does.

    Args:
        drift_csv: a drift table file.
        bootstrap: replicates B.
        seed: bootstrap seed.

    Returns:
        The ``driftlens stats`` JSON as a dict.
    """
    df = read_stats_csv(drift_csv)
    inp = stats_input(df, metrics=None, source=drift_csv)
    return analyze_table(inp, bootstrap=bootstrap, seed=seed).to_dict()


def stats_json_text(stats: dict[str, Any]) -> str:
    """Serialise the statistics the way ``driftlens stats --json`` does."""
    return json.dumps(stats, indent=2, allow_nan=False) + "\n"
