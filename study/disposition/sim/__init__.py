"""The disposition instrument's simulator: arms with known aligned rates, and known judges.

:mod:`~study.disposition.sim.model` holds the presets and the logistic model of one answer
(the true drift of an arm is known exactly), :mod:`~study.disposition.sim.responder` the
chat model that answers probes (``sim/disp-<preset>-d<dose>``) and
:mod:`~study.disposition.sim.judges` the classifier, grader and awareness judge, which
register their task handlers in :mod:`llm.sim.tasks` when imported. The generic simulator
names this package in ``llm.sim.registry.INSTRUMENT_SIM_MODULES`` and imports it on the first
task lookup.
"""

from study.disposition.sim import judges

__all__ = ["judges"]
