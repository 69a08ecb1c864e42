"""What accepting a gated proposal would change in what is already stored (impact preview).

The gate relabels held-out and control steps under the proposal; from them
:func:`ontology.refinement_gate.impact_share` estimates the share of all step labels the
new version would change (with a 95 % interval). :func:`impact_preview` scales it to every
stored run labeled under the proposal's base version and names the stored analyses of
those runs under that version, whose drift tiers could change when the estimated number
of changed labels is not surely zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlmodel import Session, col, func, select

from storage.models import Analysis, GenerationRun, Response, RewriteProposal, StepLabel
from storage.refinement_models import RefinementDecision


@dataclass(frozen=True)
class RunImpact:
    """One stored run labeled under the base version: its labels and the estimated change."""

    run: str
    labels: int
    changed: float
    changed_low: float
    changed_high: float
    analyses: tuple[int, ...]

    @property
    def tiers_could_change(self) -> bool:
        """Whether an analysis of the run exists and some label may change."""
        return bool(self.analyses) and not (self.changed_high < 1.0)

    def line(self) -> str:
        """One plain sentence for the CLI and the page."""
        text = (
            f"run {self.run}: about {self.changed:.0f} of {self.labels} step labels would "
            f"change (95 % interval {self.changed_low:.0f}-{self.changed_high:.0f})"
        )
        if self.analyses:
            ids = ", ".join(str(a) for a in self.analyses)
            could = "could change" if self.tiers_could_change else "should not change"
            text += f"; the drift tiers of analysis {ids} {could}"
        return text


def impact_preview(proposal_id: int, *, session: Session) -> list[RunImpact] | None:
    """The impact of accepting a proposal the refinement loop gated (``None`` otherwise)."""
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
        out.append(
            RunImpact(
                run=run.name if run is not None else str(run_id),
                labels=int(n),
                changed=share * n,
                changed_low=(low if not math.isnan(low) else share) * n,
                changed_high=(high if not math.isnan(high) else share) * n,
                analyses=tuple(int(a) for a in analyses if a is not None),
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
