"""Hand the simulator what it needs to answer bank requests with known truth."""

from __future__ import annotations

from collections.abc import Iterable

from llm.sim.conflicts import SimBank, register_sim_banks
from study.conflicts.items import ConflictInstance


def sim_bank(inst: ConflictInstance) -> SimBank:
    """The simulator's view of an instance: its sides and distractors."""
    p = inst.provenance
    return SimBank(
        type=inst.type,
        high_risk=inst.high_risk,
        side_a=tuple(inst.core_memories[i] for i in p.side_a),
        side_b=tuple(inst.core_memories[i] for i in p.side_b),
        distractors=frozenset(inst.distractors),
    )


def register_instances(instances: Iterable[ConflictInstance]) -> int:
    """Register instances with the in-process simulator (keyed by their request)."""
    return register_sim_banks((inst.query, sim_bank(inst)) for inst in instances)
