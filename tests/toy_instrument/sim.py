"""The toy instrument's simulator: a preset family ``toy`` and the ``coin-answer`` task.

``sim/coin-fair`` answers yes with probability 0.5 and ``sim/coin-yes`` with 0.8 — the
known truth the analysis must recover. ``sim/coin-hostile`` answers hostile text (a CSV
formula, a terminal escape, HTML): what the checks feed the report and downloads. They
register here, from the instrument's own module, into the generic simulator's registries
(:mod:`llm.sim.registry`, :mod:`llm.sim.tasks`).
"""

from __future__ import annotations

import random

from llm.seeds import stable_int
from llm.sim.presets import SimPreset
from llm.sim.registry import register_presets
from llm.sim.tasks import Messages, case_payload, register_task

TASK = "coin-answer"
FAMILY = "toy"
#: The true share of yes answers per preset.
YES_RATE: dict[str, float] = {"coin-fair": 0.5, "coin-yes": 0.8}

#: What ``sim/coin-hostile`` answers: it must stay inert wherever a report shows it.
HOSTILE_ANSWER = "=1+1 ev\x1b[31mil\x07 |a|b| `t` <b>bold</b><script>alert(1)</script> \u202e"

register_presets(
    FAMILY,
    [
        *(
            SimPreset(name=name, description=f"toy coin: yes {rate:.0%}", seed=0, class_doses={})
            for name, rate in YES_RATE.items()
        ),
        SimPreset(
            name="coin-hostile", description="toy coin: hostile text", seed=0, class_doses={}
        ),
    ],
)


@register_task(TASK)
def _answer(messages: Messages, preset: SimPreset, sample_index: int, seed: int | None) -> str:
    if preset.name == "coin-hostile":
        return HOSTILE_ANSWER
    case = case_payload(messages)
    rng = random.Random(stable_int("coin", preset.name, case.get("id"), sample_index, seed))
    return "yes" if rng.random() < YES_RATE.get(preset.name, 0.5) else "no"
