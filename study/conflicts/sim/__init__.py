"""The memory-conflict instrument's simulator: responders, judges and presets with known truth.

Importing the package registers its task handlers (:mod:`llm.sim.tasks`) and presets
(:mod:`llm.sim.registry`, family ``conflicts``); the generic simulator names this package in
``llm.sim.registry.INSTRUMENT_SIM_MODULES`` and imports it on the first lookup.
"""

from study.conflicts.sim import judge, observability, presets, responder

__all__ = ["judge", "observability", "presets", "responder"]
