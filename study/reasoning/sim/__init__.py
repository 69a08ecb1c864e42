"""The reasoning-drift instrument's simulator tasks: the question filter and the response judge.

:mod:`~study.reasoning.sim.tasks` registers both task handlers in :mod:`llm.sim.tasks` when
imported. The generic simulator names this package in
``llm.sim.registry.INSTRUMENT_SIM_MODULES`` and imports it on the first task lookup.
"""

from study.reasoning.sim import tasks

__all__ = ["tasks"]
