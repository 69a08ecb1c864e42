"""The generic simulator (SPEC §8 "known doses"): presets, registry, chat plumbing, backends.

What a simulated model writes is each instrument's knowledge and lives in its folder
(``study/<instrument>/sim/``); reasoning drift's stepped answers are
:mod:`study.reasoning.sim`.
"""

from llm.sim.presets import SimPreset
from llm.sim.registry import get_preset
from llm.sim.response import SimEdit, SimResponse

__all__ = [
    "SimEdit",
    "SimPreset",
    "SimResponse",
    "get_preset",
]
