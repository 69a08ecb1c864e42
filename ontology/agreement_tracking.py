"""Agreement of a labeling round, computed from its label records alone.

Everything here is a pure function of :class:`LabelRecord` rows (the same rows
``driftlens export labels`` writes), so the agreement a round reports can always be
recomputed from its export. The measures come from :mod:`driftlens_core.agreement`:

* pairwise exact match on the (category, leaf) pair, in percent, per labeler pair and
  their mean; Cohen's κ per pair; Krippendorff's α (nominal) over all labelers;
* the per-leaf confusion matrix (every step, every labeler pair, one count per unordered
  pair of leaves given) and the most-confused leaf pairs with their **rate**: the share of
  comparisons involving either leaf in which one labeler gave one and the other labeler the
  other leaf, and example steps.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from driftlens_core.agreement import cohens_kappa, confusion_counts, krippendorff_alpha

StepKey = tuple[int, int]  # (response_id, step_index)


@dataclass(frozen=True)
class LabelRecord:
    """One label as exported: ``response_id, step_index, labeler, category, symbol``."""

    response_id: int
    step_index: int
    labeler: str
    category: str
    symbol: str


@dataclass(frozen=True)
class ConfusionExample:
    """A step two labelers split between the leaves of a confused pair."""

    response_id: int
    step_index: int
    text: str
    labels: dict[str, str]


@dataclass(frozen=True)
class ConfusedPair:
    """Two leaves labelers put the same steps under."""

    leaf_a: str
    leaf_b: str
    count: int
    rate: float
    comparisons: int
    examples: tuple[ConfusionExample, ...] = ()


@dataclass(frozen=True)
class RoundAgreement:
    """All agreement measures of one set of labels."""

    labelers: tuple[str, ...]
    n_steps: int
    pairwise: dict[str, float]
    pairwise_n: dict[str, int]
    kappa: dict[str, float]
    mean_pairwise: float
    krippendorff_alpha: float
    most_confused: tuple[ConfusedPair, ...]
    leaves: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]
    per_labeler: dict[str, dict[str, int]] = field(default_factory=dict)

    def most_confused_rows(self) -> list[list[Any]]:
        """``[[leaf_a, leaf_b, count], ...]`` as ``--json`` prints it."""
        return [[p.leaf_a, p.leaf_b, p.count] for p in self.most_confused]

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (NaN becomes ``None``)."""
        return _json_safe(asdict(self))


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def pair_key(a: str, b: str) -> str:
    """The ``"A|B"`` key of a labeler pair."""
    return f"{a}|{b}"


def label_matrix(
    records: Sequence[LabelRecord], labelers: Sequence[str] | None = None
) -> tuple[tuple[str, ...], list[StepKey], list[list[tuple[str, str] | None]]]:
    """``labels[labeler][item]`` of (category, leaf) pairs, items sorted by (response, step)."""
    names = (
        tuple(labelers)
        if labelers is not None
        else tuple(dict.fromkeys(r.labeler for r in records))
    )
    items = sorted({(r.response_id, r.step_index) for r in records if r.labeler in names})
    index = {key: i for i, key in enumerate(items)}
    rows: list[list[tuple[str, str] | None]] = [[None] * len(items) for _ in names]
    pos = {n: i for i, n in enumerate(names)}
    for r in records:
        if r.labeler in pos:
            rows[pos[r.labeler]][index[(r.response_id, r.step_index)]] = (r.category, r.symbol)
    return names, items, rows


def compute_agreement(
    records: Sequence[LabelRecord],
    *,
    labelers: Sequence[str] | None = None,
    texts: Mapping[StepKey, str] | None = None,
    top: int = 5,
    examples: int = 5,
) -> RoundAgreement:
    """Agreement measures of a set of labels.

    Args:
        records: The labels (one per response, step and labeler).
        labelers: Labeler order (default: order of first appearance).
        texts: Step texts, for the examples of confused pairs.
        top: How many confused pairs to keep.
        examples: How many example steps per confused pair.
    """
    names, items, rows = label_matrix(records, labelers)
    pairwise: dict[str, float] = {}
    pairwise_n: dict[str, int] = {}
    kappa: dict[str, float] = {}
    for i, j in itertools.combinations(range(len(names)), 2):
        both = [(a, b) for a, b in zip(rows[i], rows[j], strict=True) if a and b]
        key = pair_key(names[i], names[j])
        pairwise_n[key] = len(both)
        pairwise[key] = 100.0 * sum(a == b for a, b in both) / len(both) if both else math.nan
        kappa[key] = cohens_kappa(rows[i], rows[j])
    shares = [v for v in pairwise.values() if not math.isnan(v)]
    mean = sum(shares) / len(shares) if shares else math.nan
    alpha = krippendorff_alpha(rows) if len(names) >= 2 and items else math.nan

    leaves_rows = [[cell[1] if cell else None for cell in row] for row in rows]
    counts = confusion_counts(leaves_rows) if items else None
    leaves = tuple(str(x) for x in counts.labels) if counts is not None else ()
    matrix = (
        tuple(tuple(int(v) for v in row) for row in counts.counts) if counts is not None else ()
    )

    # Rates and examples need the comparisons themselves, not just the counts.
    pair_count: dict[tuple[str, str], int] = defaultdict(int)
    involved: dict[str, int] = defaultdict(int)
    sample: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, j in itertools.combinations(range(len(names)), 2):
        for k, (a, b) in enumerate(zip(leaves_rows[i], leaves_rows[j], strict=True)):
            if a is None or b is None:
                continue
            involved[a] += 1
            if b != a:
                involved[b] += 1
                pair = (a, b) if a < b else (b, a)
                pair_count[pair] += 1
                if k not in sample[pair]:
                    sample[pair].append(k)
    ranked = sorted(pair_count.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    confused = []
    for (a, b), n in ranked:
        # Comparisons touching a or b: those touching a, plus those touching b, minus the
        # a-vs-b comparisons counted under both.
        comparisons = involved[a] + involved[b] - n
        picks = []
        for k in sample[(a, b)][:examples]:
            rid, idx = items[k]
            picks.append(
                ConfusionExample(
                    rid,
                    idx,
                    (texts or {}).get((rid, idx), ""),
                    {names[m]: rows[m][k][1] for m in range(len(names)) if rows[m][k]},  # type: ignore[index]
                )
            )
        confused.append(
            ConfusedPair(
                a, b, n, n / comparisons if comparisons else math.nan, comparisons, tuple(picks)
            )
        )
    per_labeler = {
        name: {
            "labels": sum(1 for c in rows[m] if c),
            "unmapped": sum(1 for c in rows[m] if c and c[1] == "unmapped"),
        }
        for m, name in enumerate(names)
    }
    return RoundAgreement(
        labelers=names,
        n_steps=len(items),
        pairwise=pairwise,
        pairwise_n=pairwise_n,
        kappa=kappa,
        mean_pairwise=mean,
        krippendorff_alpha=alpha,
        most_confused=tuple(confused),
        leaves=leaves,
        confusion=matrix,
        per_labeler=per_labeler,
    )
