"""The memory-conflict instrument's simulator presets (family ``conflicts``).

``sim/mc-*`` are response models and ``sim/judge-*`` rubric / observability judges. Their
behaviour lives in the profiles of :mod:`study.conflicts.sim.moves` (move rates, rater noise) and
:mod:`study.conflicts.sim.observability` (label error); a preset only names the model and carries
what the shared task machinery reads — the seed and the malformed-reply rate. They have
no drift doses: a reasoning-drift prompt sent to one of them is answered without drift.
"""

from __future__ import annotations

from llm.sim.presets import SimPreset
from llm.sim.registry import register_presets

FAMILY = "conflicts"
#: Share of judge / action-selection replies that break the requested format.
MALFORMED_RATE = 0.03

DESCRIPTIONS: dict[str, str] = {
    "mc-balanced": "memory conflicts: perceives and calibrates well, asks targeted questions",
    "mc-hesitant": "memory conflicts: perceives, explains less, hedges",
    "mc-committal": "memory conflicts: often commits to one side",
    "mc-quiet": "memory conflicts: rarely asks a clarifying question",
    "mc-literal": "memory conflicts: weakest diagnosis, rarely clarifies",
    "mc-abstainer": "memory conflicts: abstains (asks or defers, recommends nothing) on 30 % "
    "of the banks, 60 % with no memory (opt-in; not in the default cohort)",
    "mc-hostile": "memory conflicts: mc-balanced's moves, every answer ending in hostile text "
    "(inertness checks; opt-in)",
    "judge-lenient": "memory-conflict judge: lenient on D2/D4, mixture rater noise",
    "judge-strict": "memory-conflict judge: strict on D2/D4, mixture rater noise",
}

CONFLICT_PRESETS: tuple[SimPreset, ...] = tuple(
    SimPreset(
        name=name,
        description=description,
        seed=0,
        class_doses={},
        malformed_rate=MALFORMED_RATE,
    )
    for name, description in DESCRIPTIONS.items()
)

register_presets(FAMILY, CONFLICT_PRESETS)
