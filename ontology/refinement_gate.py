"""The refinement loop's gate: is a proposed rewrite better on steps its author never saw?

For the pair a proposal rewrites, a share of the round's steps the labelers split between
the two leaves is held out of the rewrite's evidence (:func:`split_steps`), with the same
share of the pair's other steps and a random control slice of steps of other leaves. The
held-out and control steps are labeled again under the proposed definitions by the same
labelers with the same seeds, and compared with their labels under the current definitions
(:func:`gate_statistics`):

* the **gain** is the mean over held-out steps of (agreement under the proposal − agreement
  under the current text), agreement being the share of labeler pairs that chose the same
  leaf; its 95 % interval comes from a bootstrap over responses (steps of one response are
  resampled together: they share a passage and a labeling request), through
  :func:`driftlens_core.bootstrap.cluster_bootstrap_sums`;
* every **other leaf**'s agreement (over held-out and control steps any labeler put under
  it, before or after) must not fall by more than the margin.

A proposal passes when the interval's lower bound is above the margin and no other leaf
falls that far; otherwise the reasons say why, one sentence each.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from driftlens_core.bootstrap import cluster_bootstrap_sums, percentile_interval
from llm.seeds import stable_int
from ontology.agreement_tracking import LabelRecord

StepKey = tuple[int, int]
#: ``(response_id, step_index) -> {labeler: leaf}``
LabelMap = dict[StepKey, dict[str, str]]

#: A leaf needs at least this many steps touching it for its agreement change to count.
MIN_LEAF_STEPS = 3


def label_map(records: Sequence[LabelRecord]) -> LabelMap:
    """Group label records by step."""
    out: LabelMap = defaultdict(dict)
    for r in records:
        out[(r.response_id, r.step_index)][r.labeler] = r.symbol
    return dict(out)


def step_agreement(labels: Mapping[str, str], labelers: Sequence[str]) -> float:
    """Share of labeler pairs that gave one step the same leaf (NaN with fewer than two)."""
    got = [labels[name] for name in labelers if name in labels]
    pairs = list(combinations(got, 2))
    return sum(a == b for a, b in pairs) / len(pairs) if pairs else math.nan


@dataclass(frozen=True)
class PairStats:
    """How the labelers did on one leaf pair in a round."""

    leaf_a: str
    leaf_b: str
    split: int  # labeler-pair comparisons with one leaf each
    comparisons: int  # labeler-pair comparisons touching either leaf
    agreement: float  # share of those comparisons that agreed


def pair_table(labels: LabelMap, labelers: Sequence[str]) -> list[PairStats]:
    """Every split leaf pair (``unmapped`` left out), most split first."""
    split: dict[tuple[str, str], int] = defaultdict(int)
    touching: dict[str, int] = defaultdict(int)
    agreeing: dict[str, int] = defaultdict(int)
    for step in labels.values():
        got = [step[name] for name in labelers if name in step]
        for a, b in combinations(got, 2):
            if a == b:
                touching[a] += 1
                agreeing[a] += 1
            else:
                touching[a] += 1
                touching[b] += 1
                split[tuple(sorted((a, b)))] += 1  # type: ignore[index]
    out = []
    for (a, b), n in split.items():
        if "unmapped" in (a, b):
            continue
        comparisons = touching[a] + touching[b] - n
        agree = agreeing[a] + agreeing[b]
        out.append(PairStats(a, b, n, comparisons, agree / comparisons if comparisons else 0.0))
    return sorted(out, key=lambda p: (-p.split, p.leaf_a, p.leaf_b))


@dataclass(frozen=True)
class Split:
    """Which steps of a pair's disagreements the rewriter sees and which the gate keeps."""

    evidence: tuple[StepKey, ...]
    heldout: tuple[StepKey, ...]
    control: tuple[StepKey, ...]


def split_steps(
    labels: LabelMap,
    labelers: Sequence[str],
    pair: tuple[str, str],
    *,
    holdout: float,
    control: int,
    seed: int,
) -> Split:
    """Hold out a share of the pair's steps, and draw a control slice of other steps.

    The held-out set is ``holdout`` of the steps the labelers split between the two leaves
    (kept out of the rewrite's evidence) **and** the same share of the steps that touch
    either leaf without that split, so that it holds the pair's steps in the round's
    proportions: a gain measured on split steps alone would reward any rewrite that turns
    a 1-of-3 agreement into a coin flip (the steps were chosen for disagreeing; they can
    only regress upwards), while the agreements it breaks would go unseen. Deterministic
    for a seed; with one split step nothing is held out (the gate then rejects).
    """
    a, b = pair

    def given(step: dict[str, str]) -> set[str]:
        return {step[n] for n in labelers if n in step}

    split = sorted(k for k, step in labels.items() if {a, b} <= given(step))
    rest = sorted(k for k, step in labels.items() if given(step) & {a, b} and k not in split)
    rng = random.Random(stable_int("refine-split", seed, a, b))
    rng.shuffle(split)
    rng.shuffle(rest)
    n_out = min(len(split) - 1, max(1, round(holdout * len(split)))) if len(split) > 1 else 0
    n_rest = round(holdout * len(rest)) if n_out else 0
    heldout = tuple(sorted([*split[:n_out], *rest[:n_rest]]))
    evidence = tuple(sorted(split[n_out:]))
    others = sorted(set(labels) - set(split) - set(rest))
    rng.shuffle(others)
    return Split(evidence, heldout, tuple(sorted(others[:control])))


@dataclass(frozen=True)
class GateResult:
    """The gate's statistics and decision for one proposal."""

    n_heldout: int
    n_clusters: int
    before: float  # mean held-out agreement under the current definitions
    after: float  # … under the proposed definitions
    gain: float
    low: float
    high: float
    margin: float
    leaf_changes: dict[str, dict[str, float]] = field(default_factory=dict)
    passed: bool = False
    reasons: tuple[str, ...] = ()
    #: estimated share of all step labels an accept would change (:func:`impact_share`)
    impact: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The stored form (``refinement_decision.gate``)."""
        return {
            "n_heldout": self.n_heldout,
            "n_clusters": self.n_clusters,
            "before": self.before,
            "after": self.after,
            "gain": self.gain,
            "low": self.low,
            "high": self.high,
            "margin": self.margin,
            "leaf_changes": self.leaf_changes,
            "passed": self.passed,
            "impact": self.impact,
        }


def _gain_interval(
    gains: Mapping[StepKey, float], *, n_boot: int, seed: int
) -> tuple[float, float, float, int]:
    by_response: dict[int, list[float]] = defaultdict(list)
    for (rid, _idx), g in gains.items():
        by_response[rid].append(g)
    stats = np.array([[sum(v), len(v)] for _, v in sorted(by_response.items())], dtype=float)
    mean = float(stats[:, 0].sum() / stats[:, 1].sum())
    if len(stats) < 2:
        return mean, math.nan, math.nan, len(stats)
    sums = cluster_bootstrap_sums(stats, n_boot=n_boot, seed=seed)
    (low, high) = percentile_interval(sums[:, 0] / sums[:, 1], 0.95)
    return mean, float(low[0]), float(high[0]), len(stats)


def gate_statistics(
    before: LabelMap,
    after: LabelMap,
    split: Split,
    labelers: Sequence[str],
    pair: tuple[str, str],
    *,
    margin: float,
    n_boot: int = 2000,
    seed: int = 0,
) -> GateResult:
    """Compare held-out and control steps under the current and the proposed definitions."""
    heldout = [k for k in split.heldout if k in before and k in after]
    gains = {
        k: step_agreement(after[k], labelers) - step_agreement(before[k], labelers) for k in heldout
    }
    gains = {k: g for k, g in gains.items() if not math.isnan(g)}
    reasons: list[str] = []
    if not gains:
        return GateResult(
            0, 0, math.nan, math.nan, math.nan, math.nan, math.nan, margin,
            reasons=("no held-out steps to check the proposal on",),
        )  # fmt: skip
    gain, low, high, clusters = _gain_interval(gains, n_boot=n_boot, seed=seed)
    old = float(np.mean([step_agreement(before[k], labelers) for k in gains]))
    new = float(np.mean([step_agreement(after[k], labelers) for k in gains]))
    if math.isnan(low):
        reasons.append(
            f"the held-out steps come from {clusters} response(s); an interval needs two or more"
        )
    elif low <= margin:
        reasons.append(
            f"the lower 95 % bound of the held-out agreement gain ({low:+.3f}; gain "
            f"{gain:+.3f}) is not above the margin {margin:.3f}"
        )
    checked = [k for k in (*split.heldout, *split.control) if k in before and k in after]
    touching: dict[str, list[StepKey]] = defaultdict(list)
    for k in checked:
        for leaf in {*before[k].values(), *after[k].values()}:
            if leaf not in pair and leaf != "unmapped":
                touching[leaf].append(k)
    changes: dict[str, dict[str, float]] = {}
    for leaf, keys in sorted(touching.items()):
        if len(keys) < MIN_LEAF_STEPS:
            continue
        was = float(np.nanmean([step_agreement(before[k], labelers) for k in keys]))
        now = float(np.nanmean([step_agreement(after[k], labelers) for k in keys]))
        changes[leaf] = {"before": was, "after": now, "n": float(len(keys))}
        if was - now > margin:
            reasons.append(f"agreement on steps touching {leaf!r} fell from {was:.3f} to {now:.3f}")
    return GateResult(
        n_heldout=len(gains),
        n_clusters=clusters,
        before=old,
        after=new,
        gain=gain,
        low=low,
        high=high,
        margin=margin,
        leaf_changes=changes,
        passed=not reasons,
        reasons=tuple(reasons),
    )


def impact_share(
    before: LabelMap,
    after: LabelMap,
    split: Split,
    labelers: Sequence[str],
    *,
    pair_weight: float,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """Estimated share of all step labels an accept would change, with a 95 % interval.

    The held-out steps sample the pair's steps and the control slice the other steps, so
    the two change rates are weighted by the pair's share of the round's steps
    (``pair_weight``); the interval is a bootstrap over responses, as for the gain.
    """
    held = set(split.heldout)
    rows: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for k in (*split.heldout, *split.control):
        if k not in before or k not in after:
            continue
        col = 0 if k in held else 2
        for name in labelers:
            if name in before[k] and name in after[k]:
                rows[k[0]][col] += before[k][name] != after[k][name]
                rows[k[0]][col + 1] += 1
    if not rows:
        return {"share": math.nan, "low": math.nan, "high": math.nan}
    stats = np.array([v for _, v in sorted(rows.items())], dtype=float)

    def estimate(s: np.ndarray) -> np.ndarray:
        pair = np.divide(s[..., 0], s[..., 1], out=np.zeros_like(s[..., 0]), where=s[..., 1] > 0)
        other = np.divide(s[..., 2], s[..., 3], out=np.zeros_like(s[..., 2]), where=s[..., 3] > 0)
        return pair_weight * pair + (1.0 - pair_weight) * other

    share = float(estimate(stats.sum(axis=0)))
    if len(stats) < 2:
        return {"share": share, "low": math.nan, "high": math.nan}
    sums = cluster_bootstrap_sums(stats, n_boot=n_boot, seed=seed)
    (low, high) = percentile_interval(estimate(sums), 0.95)
    return {"share": share, "low": float(low[0]), "high": float(high[0])}
