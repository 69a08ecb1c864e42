"""Oracle vs pipeline track: a memory system extracts the bank, and we label what survived.

The pipeline track asks whether a memory system keeps a conflict interpretable. A
:class:`MemoryExtractor` turns an instance's history into the memories it would store;
:func:`extract_bank` labels the result:

* ``FULL`` — both sides of the conflict and every memory carrying its relation (the
  context, the oscillation phase, the source) are kept;
* ``PARTIAL`` — both sides kept, but a relation-carrying memory lost;
* ``None`` — one side gone: no observable conflict, so D1 and D2 do not apply.

The built-in ``sim-lossy`` extractor drops memories with known probabilities (see
:func:`llm.sim.conflicts.lossy_extract`); it works on the curated memories themselves,
not on multi-session dialogues. Adapters for real memory systems (Mem0, Letta) need an
LLM and embeddings at run time and are not shipped; they would implement the same
protocol, importing their package lazily.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from llm.seeds import stable_int
from llm.sim.conflicts import lossy_extract
from storage.errors import InputError
from study.conflicts.items import ConflictInstance

OBSERVABILITY: tuple[str, ...] = ("FULL", "PARTIAL", "None")


@dataclass(frozen=True)
class ExtractedBank:
    """What a memory system kept of an instance's core memories, and the label."""

    memories: tuple[str, ...]
    observability: str


@runtime_checkable
class MemoryExtractor(Protocol):
    """A memory system: ingests an instance's history and returns what it stores."""

    @property
    def name(self) -> str:
        """The memory system's name (``--system``)."""
        ...

    @property
    def resolution_rule(self) -> str:
        """How it resolves a contradiction: ``add-both``, ``latest-wins`` or ``delete``."""
        ...

    def extract(self, instance: ConflictInstance, *, seed: int) -> ExtractedBank:
        """The stored memories for one instance."""
        ...


@dataclass(frozen=True)
class SimLossyExtractor:
    """Drops relation memories and, sometimes, a whole side (latest-wins) with known rates."""

    p_drop_relation: float = 0.15
    p_drop_side: float = 0.15
    name: str = "sim-lossy"
    resolution_rule: str = "latest-wins"

    def extract(self, instance: ConflictInstance, *, seed: int) -> ExtractedBank:
        """Extract with a seed derived from (seed, instance), so reruns agree."""
        rng = random.Random(stable_int("sim-lossy", seed, instance.instance_id))
        p = instance.provenance
        kept, label = lossy_extract(
            instance.core_memories,
            p.relation,
            p.side_a,
            p.side_b,
            p_drop_relation=self.p_drop_relation,
            p_drop_side=self.p_drop_side,
            rng=rng,
        )
        return ExtractedBank(tuple(kept), label)


EXTRACTORS: dict[str, MemoryExtractor] = {"sim-lossy": SimLossyExtractor()}


def get_extractor(name: str) -> MemoryExtractor:
    """A registered extractor by name.

    Raises:
        InputError: unknown name.
    """
    try:
        return EXTRACTORS[name]
    except KeyError:
        known = ", ".join(sorted(EXTRACTORS))
        raise InputError(f"Unknown memory system {name!r}; available: {known}.") from None


def extract_bank(
    extractor: MemoryExtractor, instance: ConflictInstance, *, seed: int
) -> ExtractedBank:
    """Run an extractor on one instance."""
    return extractor.extract(instance, seed=seed)
