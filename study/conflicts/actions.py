"""The action vocabulary of the conflict-aware action policy (CAAP), as both its sides speak it.

:mod:`study.conflicts.policy` asks a model to choose one of :data:`ACTIONS` (stage 1, the
task :data:`SELECT_TASK`) and then to write the answer under an :data:`ACTION_LINE`;
the simulated backbone (:mod:`study.conflicts.sim.responder`) reads the same names back.
"""

from __future__ import annotations

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
