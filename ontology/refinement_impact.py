"""What accepting a gated proposal would change in what is already stored (impact preview).

The gate relabels held-out and control steps under the proposal; from them
:func:`ontology.refinement_gate.impact_share` estimates the share of all step labels the
new version would change (with a 95 % interval). :func:`impact_preview` scales it to every
stored run labeled under the proposal's base version and names the stored analyses of
those runs under that version, whose drift tiers could change when the estimated number
of changed labels is not surely zero.

Whether those tiers *would* change is estimated by the instrument that owns the analysis
(its plugin's ``tier_impact`` part, :class:`TierAsk` in, :class:`TierImpact` out): it
applies label flips at the estimated rate to the analysis's stored trajectories in seeded
draws, recomputes the tiers with the analysis's own functions and counts the draws whose
tier order differs from the unflipped one. This module names no instrument: it asks every
installed plugin that has the part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlmodel import Session, col, func, select

from driftlens_plugins import instruments, load_ref
from storage.models import Analysis, GenerationRun, Response, RewriteProposal, StepLabel
from storage.refinement_models import RefinementDecision

#: Draws of the tier estimate per analysis (each recomputes the analysis's drift table).
TIER_DRAWS = 20


@dataclass(frozen=True)
class TierAsk:
    """What an instrument needs to estimate whether an analysis's tiers would change.

    Attributes:
        analysis: the stored analysis's id.
        leaves: the two leaves whose definitions the proposal rewrites (the labels that
            change concentrate on them).
        share: estimated share of all step labels the accept would change.
        low: lower end of its 95 % interval (``share`` when unknown).
        high: upper end of its 95 % interval (``share`` when unknown).
        draws: number of seeded flip draws.
        seed: seed of the draws.
    """

    analysis: int
    leaves: tuple[str, str]
    share: float
    low: float
    high: float
    draws: int = TIER_DRAWS
    seed: int = 0


@dataclass(frozen=True)
class TierImpact:
    """An analysis's tier order and the share of flip draws in which it changed.

    Attributes:
        analysis: the analysis's id.
        draws: draws made.
        changed: draws in which the tier order of some model × metric differed.
        orders: the unflipped order per model × metric (``model/metric: a > b > c``).
        examples: up to three changed orders seen in the draws.
    """

    analysis: int
    draws: int
    changed: int
    orders: tuple[str, ...]
    examples: tuple[str, ...] = ()

    @property
    def share(self) -> float:
        """Share of the draws in which the tier order changed."""
        return self.changed / self.draws if self.draws else math.nan

    def line(self) -> str:
        """One plain sentence: would the tiers change, in what share of the draws."""
        verdict = "would change" if self.changed else "would not change"
        text = (
            f"analysis {self.analysis}: the drift tier order {verdict} in {self.changed} of "
            f"{self.draws} draws ({self.share:.0%}) with the estimated label changes applied"
        )
        if self.examples:
            text += f", e.g. {self.examples[0]}"
        return text


def tier_impacts(ask: TierAsk, *, session: Session) -> TierImpact | None:
    """The estimate of the first installed instrument that owns the analysis (or ``None``)."""
    for plugin in instruments():
        if plugin.tier_impact is None:
            continue
        got = load_ref(plugin.tier_impact)(ask, session=session)
        if isinstance(got, TierImpact):
            return got
    return None


@dataclass(frozen=True)
class RunImpact:
    """One stored run labeled under the base version: its labels and the estimated change."""

    run: str
    labels: int
    changed: float
    changed_low: float
    changed_high: float
    analyses: tuple[int, ...]
    #: the instruments' estimates for the analyses (empty: none could estimate)
    tiers: tuple[TierImpact, ...] = ()

    @property
    def tiers_could_change(self) -> bool:
        """Whether an analysis of the run exists and some label may change."""
        return bool(self.analyses) and not (self.changed_high < 1.0)

    @property
    def tiers_would_change(self) -> bool:
        """Whether the tier order changed in any draw of any analysis's estimate."""
        return any(t.changed for t in self.tiers)

    def line(self) -> str:
        """One plain sentence for the CLI and the page."""
        text = (
            f"run {self.run}: about {self.changed:.0f} of {self.labels} step labels would "
            f"change (95 % interval {self.changed_low:.0f}-{self.changed_high:.0f})"
        )
        estimated = {t.analysis for t in self.tiers}
        text += "".join(f"; {t.line()}" for t in self.tiers)
        rest = tuple(a for a in self.analyses if a not in estimated)
        if rest:
            ids = ", ".join(str(a) for a in rest)
            could = "could change" if self.tiers_could_change else "should not change"
            text += f"; the drift tiers of analysis {ids} {could}"
        return text


def impact_preview(
    proposal_id: int, *, session: Session, draws: int = TIER_DRAWS, seed: int = 0
) -> list[RunImpact] | None:
    """The impact of accepting a proposal the refinement loop gated (``None`` otherwise).

    Args:
        proposal_id: the proposal.
        session: open session.
        draws: flip draws of each analysis's tier estimate (0: no estimate).
        seed: seed of the draws.
    """
    decision = session.exec(
        select(RefinementDecision).where(RefinementDecision.proposal_id == proposal_id)
    ).first()
    proposal = session.get(RewriteProposal, proposal_id)
    impact = (decision.gate or {}).get("impact") if decision is not None else None
    if not impact or proposal is None or proposal.base_version_id is None:
        return None
    share, low, high = (float(impact.get(k, math.nan)) for k in ("share", "low", "high"))
    version = proposal.base_version_id
    counts = session.exec(
        select(Response.run_id, func.count())
        .select_from(StepLabel)
        .join(Response, col(Response.id) == col(StepLabel.response_id))
        .where(StepLabel.ontology_version_id == version)
        .group_by(col(Response.run_id))
    ).all()
    out = []
    for run_id, n in counts:
        run = session.get(GenerationRun, run_id)
        analyses = session.exec(
            select(Analysis.id).where(
                Analysis.run_id == run_id, Analysis.ontology_version_id == version
            )
        ).all()
        ids = tuple(int(a) for a in analyses if a is not None)
        asks = [
            TierAsk(
                analysis=a,
                leaves=(decision.leaf_a, decision.leaf_b),  # type: ignore[union-attr]
                share=share,
                low=low if not math.isnan(low) else share,
                high=high if not math.isnan(high) else share,
                draws=draws,
                seed=seed,
            )
            for a in (ids if draws > 0 and not math.isnan(share) else ())
        ]
        tiers = tuple(t for t in (tier_impacts(a, session=session) for a in asks) if t)
        out.append(
            RunImpact(
                run=run.name if run is not None else str(run_id),
                labels=int(n),
                changed=share * n,
                changed_low=(low if not math.isnan(low) else share) * n,
                changed_high=(high if not math.isnan(high) else share) * n,
                analyses=ids,
                tiers=tiers,
            )
        )
    return out


def gate_summary(proposal_id: int, *, session: Session) -> list[str] | None:
    """Plain lines of the gate's numbers and the impact preview (``None``: not gated)."""
    decision = session.exec(
        select(RefinementDecision).where(RefinementDecision.proposal_id == proposal_id)
    ).first()
    if decision is None or not decision.gate:
        return None
    g = decision.gate
    verdict = g.get("verdict") or ("accepted" if g.get("passed") else "rejected")
    lines = [
        f"held-out agreement {g.get('before', math.nan):.3f} -> {g.get('after', math.nan):.3f}: "
        f"gain {g.get('gain', math.nan):+.3f}, 95 % interval [{g.get('low', math.nan):+.3f}, "
        f"{g.get('high', math.nan):+.3f}] over {g.get('n_heldout')} steps of "
        f"{g.get('n_clusters')} responses (margin {g.get('margin', math.nan):.3f}); "
        f"verdict: {verdict}; decision: {decision.decision}",
        *(f"why: {r}" for r in decision.reasons),
    ]
    impact = g.get("impact") or {}
    if impact:
        lines.append(
            f"labels an accept would change: {impact.get('share', math.nan):.1%} of all step "
            f"labels (95 % interval {impact.get('low', math.nan):.1%}-"
            f"{impact.get('high', math.nan):.1%})"
        )
    lines += [f"impact: {r.line()}" for r in impact_preview(proposal_id, session=session) or []]
    return lines
