"""The conflict actions: the CAAP vocabulary both sides of the policy speak, what an answer does
with a conflict (its action class), and the rubric's not-applicable rule.

:mod:`study.conflicts.policy` asks a model to choose one of :data:`ACTIONS` (stage 1, the
task :data:`SELECT_TASK`) and then to write the answer under an :data:`ACTION_LINE`;
the simulated backbone (:mod:`study.conflicts.sim.responder`) reads the same names back.

The action set is the conflict-aware policy's (TANGLE's CAAP): ``commit`` (one unconditional
answer: one side treated as decisive, or a generic suggestion that ignores the conflict),
``conditionalize`` (one option per case), ``clarify`` (asks the question that would settle
it), ``verify`` (names the check to make before acting), ``defer`` (declines: it cannot tell
from the memories) and ``reversible_trial`` (a low-harm step to try). The rubric judge
reports one per answer; verdicts stored before it did read ``unknown``.

**Abstentions** are the answers that make no recommendation at all — ``clarify``,
``verify`` or ``defer`` when the answer asks, checks or declines *instead of* advising.
For them D3 (confidence calibration) is **not applicable**: an answer that states no
confidence cannot be over- or under-confident. Scoring it 4 would let an answer that only
asks max out calibration, scoring it 0 would punish the right move under an irreducible
conflict. D1, D2, D4 and D5 are scored as for any answer (a question can show that the
conflict was perceived, and it can be targeted or generic; claims it makes must be
grounded).

**Totals under the rule** (:func:`rubric_total`): the D1–D5 total is 5 × the mean of the
dimensions that apply, defined only where D1 and D2 apply (the shown bank kept an
observable conflict). With all five applying it is the plain sum; an abstention's total is
its four other scores × 5/4, on the same 0–20 scale. A partial sum (the no-memory
baseline's D3–D5) follows the same rule: ``k`` × the mean of its applicable dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The stage-1 task marker.
SELECT_TASK = "caap-select"
#: The actions, from the least cautious to the most.
ACTIONS: tuple[str, ...] = (
    "commit",
    "conditionalize",
    "clarify",
    "verify",
    "defer",
    "reversible_trial",
)
#: The line of a stage-2 system message that carries the chosen action.
ACTION_LINE = "Chosen action:"
#: The actions that make no recommendation: D3 does not apply to them.
ABSTAIN_ACTIONS: frozenset[str] = frozenset({"clarify", "verify", "defer"})
#: The action of a verdict stored before the judge reported one.
UNKNOWN = "unknown"
#: The ``JudgeScore`` kind of the action class (value: index in :data:`ACTIONS`).
ACTION_KIND = "conflict_action"


def is_abstention(action: str | None) -> bool:
    """Whether an action class makes no recommendation (``unknown`` is not one)."""
    return action in ABSTAIN_ACTIONS


def action_code(action: str) -> float:
    """The stored value of an action class."""
    return float(ACTIONS.index(action))


def action_name(code: float | None) -> str:
    """The action class of a stored value (``unknown`` for none or an unknown code)."""
    if code is None or not np.isfinite(code) or not 0 <= int(code) < len(ACTIONS):
        return UNKNOWN
    return ACTIONS[int(code)]


def rubric_total(values: np.ndarray, *, required: Sequence[int] = (0, 1)) -> np.ndarray:
    """Totals of score rows under the not-applicable rule (see the module docstring).

    Args:
        values: ``(n, k)`` scores, NaN = not applicable (``k`` = 5 for D1–D5).
        required: Columns that must apply for a total to exist (D1 and D2 for the total;
            none for a partial sum such as D3–D5).

    Returns:
        ``(n,)`` totals: ``k`` × the mean of the applicable columns, NaN where a required
        column or every column is missing.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError("rubric_total expects a 2-d array of scores")
    present = np.isfinite(v)
    n_present = present.sum(axis=1)
    sums = np.where(present, v, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = v.shape[1] * sums / n_present
    ok = n_present > 0
    for j in required:
        ok &= present[:, j]
    return np.where(ok, total, np.nan)
