"""The round a page opens on by default: the newest finished round of the refinement loop.

Validation's *cross* experiment stores one round per ontology (the refined one and the
original-style one) after the loop's own rounds; the newest round is then the original-style
ontology's, with near-zero agreement, and rewriting its confused pair makes no sense. The
loop's round is the newest finished one that no experiment made, on the operational ontology.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ontology.rounds import RoundSummary
from ontology.validation_runs import stored_results


def experiment_rounds(*, workspace: Path) -> set[int]:
    """Numbers of the rounds that stored validation experiments made (cross)."""
    results, _problems = stored_results(workspace=workspace)
    return {
        int(row["round"])
        for r in results
        if r.report.experiment == "cross"
        for row in r.report.rows
        if isinstance(row.get("round"), int)
    }


def working_round(
    history: Sequence[RoundSummary], *, exclude: set[int], ontology: str = "driftlens"
) -> int | None:
    """The newest finished round not in ``exclude`` on ``ontology`` (any version).

    Falls back to the newest finished round not excluded, then the newest finished round,
    then the newest round; ``None`` without rounds.
    """
    done = [h for h in history if h.status == "done"]
    fresh = [h for h in done if h.round not in exclude]
    on_ontology = [h for h in fresh if h.ontology_version.split("@")[0] == ontology]
    tiers = (on_ontology, fresh, done, list(history))
    for tier in tiers:
        if tier:
            return max(h.round for h in tier)
    return None
