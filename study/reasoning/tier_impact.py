"""Would an ontology rewrite change a stored drift analysis's tiers? (the impact preview)

The refinement gate estimates the share of all step labels an accept would change
(:class:`ontology.refinement_impact.TierAsk`: the share with its 95 % interval, and the two
leaves the rewrite touches). Here that estimate is applied to the analysis's own stored
trajectories: in each seeded draw a flip rate is drawn uniformly from the interval, every
step labeled with one of the two leaves flips to the other with the probability that makes
the expected number of flips equal that rate times all the run's labels (the held-out
relabel shows the changes concentrate on the rewritten pair), the drift table is rebuilt with
:func:`study.reasoning.drift.build_drift_table` (the core's ``pair_drift``, as the analysis
does) and each model × metric's classes are ordered by their mean drift, the tier level of
:mod:`study.reasoning.report.tables`. A draw *changes the tiers* when any of those orders
differs from the unflipped one. The unflipped order is recomputed the same way (not read
from the stored result) so both sides come from one function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from sqlmodel import Session

from ontology.refinement_impact import TierAsk, TierImpact
from ontology.versions import document, get_version
from storage.models import Analysis, GenerationRun
from study.reasoning.drift import DRIFT_COLUMNS, Trajectory, build_drift_table
from study.reasoning.trajectories import load_trajectories

#: Metric columns of the drift table an order is computed for.
_METRICS = tuple(c for c in DRIFT_COLUMNS if c in ("dtw", "sri", "levenshtein", "jsd"))


def tier_orders(rows: pd.DataFrame, metrics: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each model × metric's condition classes, highest mean drift first (``none`` left out).

    The class mean over its rows is the tier's drift level (``mean_drift`` of the report's
    tiers table: Σ n·mean / Σ n over its conditions is the mean over its rows).
    """
    out: dict[str, tuple[str, ...]] = {}
    # The baseline-vs-baseline rows (class ``none``) are the noise floor, not a tier.
    rows = rows[rows["condition_class"] != "none"]
    if rows.empty:
        return out
    for metric in metrics:
        means = rows.groupby(["model", "condition_class"], sort=True)[metric].mean()
        for model, g in means.groupby(level=0, sort=True):
            ranked = g.droplevel(0).sort_values(ascending=False, kind="stable")
            out[f"{model}/{metric}"] = tuple(str(k) for k in ranked.index)
    return out


def _flip(
    items: Sequence[Trajectory], a: int, b: int, p: float, rng: np.random.Generator
) -> list[Trajectory]:
    """The trajectories with each ``a``/``b`` step swapped to the other with probability p."""
    out = []
    for t in items:
        if not t.usable or not t.symbols:
            out.append(t)
            continue
        s = np.asarray(t.symbols)
        hit = ((s == a) | (s == b)) & (rng.random(s.size) < p)
        if hit.any():
            s = np.where(hit, np.where(s == a, b, a), s)
            t = replace(t, symbols=tuple(int(x) for x in s))
        out.append(t)
    return out


def _fmt(key: str, order: tuple[str, ...]) -> str:
    return f"{key}: {' > '.join(order)}"


def tier_impact(ask: TierAsk, *, session: Session) -> TierImpact | None:
    """Estimate whether the analysis's drift tier order would change (``None``: not ours).

    Args:
        ask: the analysis, the rewritten pair, the estimated change share and the draws.
        session: open session.

    Returns:
        The unflipped orders and the number of draws that changed any of them.
    """
    analysis = session.get(Analysis, ask.analysis)
    if analysis is None or "labeler" not in (analysis.config or {}):
        return None
    labeler = str(analysis.config["labeler"])
    version = get_version(analysis.ontology_version_id, session=session)
    symbol_of = document(version).symbol_of
    if any(leaf not in symbol_of for leaf in ask.leaves):
        return None
    a, b = (symbol_of[leaf] for leaf in ask.leaves)
    alpha = float(analysis.config.get("sri_alpha", 0.5))
    metrics = [m for m in analysis.config.get("metrics", _METRICS) if m in _METRICS]
    run = session.get(GenerationRun, analysis.run_id)
    if run is None:
        return None
    # One analysis row per run, and pairs never cross models: this run's trajectories make
    # exactly the orders of its model, the part of the tiers the run's labels can move.
    items = load_trajectories(run.name, labeler, session=session, ontology_version=version.id)
    labels = sum(len(t.symbols) for t in items if t.usable)
    pair = sum(int(np.isin(t.symbols, (a, b)).sum()) for t in items if t.usable and t.symbols)
    base = tier_orders(build_drift_table(items, alpha=alpha).rows, metrics)
    rng = np.random.default_rng(ask.seed)
    changed, examples = 0, list[str]()
    for _ in range(ask.draws):
        rate = float(rng.uniform(min(ask.low, ask.high), max(ask.low, ask.high)))
        p = min(1.0, rate * labels / pair) if pair else 0.0
        orders = tier_orders(
            build_drift_table(_flip(items, a, b, p, rng), alpha=alpha).rows, metrics
        )
        diff = [k for k in base if orders.get(k) != base[k]]
        if diff:
            changed += 1
            if len(examples) < 3:
                examples.append(_fmt(diff[0], orders.get(diff[0], ())))
    return TierImpact(
        analysis=ask.analysis,
        draws=ask.draws,
        changed=changed,
        orders=tuple(_fmt(k, v) for k, v in base.items()),
        examples=tuple(examples),
    )
