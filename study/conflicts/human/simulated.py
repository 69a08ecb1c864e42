"""The simulator's truth of a rubric task, for the simulated annotator pool.

:class:`annotation.simulated.AnnotatorPool` answers a ``conflict_rubric`` task (and its
triage twin's) with what the simulated answer in it truly deserves: its moves are read back
from the answer's text (:func:`study.conflicts.sim.moves.recover_moves`, as the simulated
judge reads them) and scored by the rubric's truth (:func:`~study.conflicts.sim.moves.true_scores`);
the pool adds its known noise. Only simulated answers carry the marker phrases; a real
model's answer reads as "no move", so the pool is for the simulator's runs alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.kinds import triage_name
from annotation.simulated import register_truth
from study.conflicts.human.kinds import NOT_APPLICABLE, RUBRIC_DIMENSIONS
from study.conflicts.sim.moves import recover_moves, true_action, true_scores


def rubric_truth(data: Mapping[str, Any]) -> dict[str, str]:
    """The true D1-D5 (``n/a`` for an abstention's D3), action and D6 of a rubric task."""
    moves = recover_moves(str(data.get("response") or ""))
    high_risk = bool(data.get("high_risk"))
    truth = true_scores(moves, high_risk=high_risk)
    out = {d: NOT_APPLICABLE if truth[d] is None else str(int(truth[d])) for d in RUBRIC_DIMENSIONS}
    out["action"] = true_action(moves, str(data.get("conflict_type") or "CPC"))
    if high_risk and truth.get("d6"):
        out["d6"] = str(truth["d6"])
    return out


for _study in ("conflict_rubric", triage_name("conflict_rubric")):
    register_truth(_study, rubric_truth)
