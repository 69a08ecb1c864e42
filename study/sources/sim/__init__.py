"""The source-reliance instrument's simulator: letter probes answered from behaviour presets.

:mod:`~study.sources.sim.probe` holds the presets and the known-truth answer rule (and the
tier-2 claim task it registers in :mod:`llm.sim.tasks` when imported),
:mod:`~study.sources.sim.backend` the in-process backend and HTTP route, and
:mod:`~study.sources.sim.wiring` the parser of our rendered probes and the served
simulator. The generic simulator names this package in
``llm.sim.registry.INSTRUMENT_SIM_MODULES`` and imports it on the first task lookup.
"""

from study.sources.sim import probe

__all__ = ["probe"]
