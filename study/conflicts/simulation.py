"""Hand the simulator what it needs to answer bank requests with known truth."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from study.conflicts.items import ConflictInstance
from study.conflicts.sim.responder import SimBank, register_sim_banks


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


def register_shown_banks(
    banks: Iterable[tuple[ConflictInstance, Sequence[str], Sequence[Sequence[int]]]],
) -> int:
    """Register banks whose shown memories are a memory system's own texts.

    Each entry is ``(instance, shown memories, facts of each shown memory)``: a shown memory
    joins the side(s) of the curated core memories it carries, so the simulated responder
    sees the conflict Mem0 kept exactly as it sees a curated one.
    """

    def one(
        inst: ConflictInstance, shown: Sequence[str], facts: Sequence[Sequence[int]]
    ) -> SimBank:
        base = sim_bank(inst)
        p = inst.provenance
        a = tuple(m for m, f in zip(shown, facts, strict=True) if set(f) & set(p.side_a))
        b = tuple(m for m, f in zip(shown, facts, strict=True) if set(f) & set(p.side_b))
        return replace(base, side_a=base.side_a + a, side_b=base.side_b + b)

    return register_sim_banks((inst.query, one(inst, s, f)) for inst, s, f in banks)
