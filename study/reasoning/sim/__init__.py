"""The reasoning-drift instrument's simulator: stepped answers with known drift, and its tasks.

:mod:`~study.reasoning.sim.bank` holds the value leaves and the sentences that express
them, :mod:`~study.reasoning.sim.classify` the memory-line classifier,
:mod:`~study.reasoning.sim.generator` the seeded trajectories and their dosed edits,
:mod:`~study.reasoning.sim.responder` the stepped responder (registered in
:mod:`llm.sim.registry` with the sentence bank) and :mod:`~study.reasoning.sim.tasks` the
question filter and response judge (registered in :mod:`llm.sim.tasks`) and
:mod:`~study.reasoning.sim.presets` the dose presets ``default``, ``null`` and ``strong``
(registered in :mod:`llm.sim.registry`, family ``drift``). The generic simulator
names this package in ``llm.sim.registry.INSTRUMENT_SIM_MODULES`` and imports it on the
first stepped answer or task lookup.
"""

from study.reasoning.sim import presets, responder, tasks

__all__ = ["presets", "responder", "tasks"]
