"""The built-in drift simulator (SPEC §8 "known doses"): presets, generator, backends."""

from llm.sim.classify import default_classify_memory, split_user_message
from llm.sim.generator import SimEdit, SimResponse, simulate
from llm.sim.presets import PRESETS, SimPreset
from llm.sim.registry import get_preset

__all__ = [
    "PRESETS",
    "SimEdit",
    "SimPreset",
    "SimResponse",
    "default_classify_memory",
    "get_preset",
    "simulate",
    "split_user_message",
]
