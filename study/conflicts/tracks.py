"""Oracle vs pipeline track: a memory system extracts the bank, and we label what survived.

The pipeline track asks whether a memory system keeps a conflict interpretable. A
:class:`MemoryExtractor` turns an instance's history into the memories it would store;
:func:`extract_bank` labels the result:

* ``FULL`` — both sides of the conflict and every memory carrying its relation (the
  context, the oscillation phase, the source) are kept;
* ``PARTIAL`` — both sides kept, but a relation-carrying memory lost;
* ``None`` — one side gone: no observable conflict, so D1 and D2 do not apply.

Two simulated extractors are built in:

* ``sim-lossy`` drops curated memories with known probabilities
  (:func:`study.conflicts.sim.responder.lossy_extract`) — no dialogue needed;
* ``sim-dialogue`` *ingests a multi-session dialogue* (:mod:`study.conflicts.dialogues`)
  window by window (:func:`study.conflicts.sim.responder.dialogue_extract`): it misses stated facts
  with known rates (relation-carrying ones more often) and applies latest-wins to a
  revising turn with a known probability. It stores, for each fact it kept, the
  instance's compact memory record, and its label is computed against the dialogue's
  truth annotations with the same rule.

A :class:`DialogueExtractor` says so with ``reads_dialogues = True``; the plan then hands
it the instance's dialogue and skips instances without one.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from llm.memory_systems import MemorySystem
from llm.seeds import stable_int
from storage.errors import InputError
from study.conflicts.dialogues import Dialogue, Turn
from study.conflicts.items import ConflictInstance
from study.conflicts.sim.responder import dialogue_extract, lossy_extract

OBSERVABILITY: tuple[str, ...] = ("FULL", "PARTIAL", "None")


@dataclass(frozen=True)
class ExtractedBank:
    """What a memory system kept of an instance's core memories, and the label.

    ``facts`` is filled by systems that store their own texts (a real memory system):
    for each stored memory, the indices of the core memories it carries (empty for a
    memory traced to no fact, such as one from a filler session).
    """

    memories: tuple[str, ...]
    observability: str
    facts: tuple[tuple[int, ...], ...] = ()


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


def observability_label(inst: ConflictInstance, kept: Sequence[int]) -> str:
    """FULL / PARTIAL / None of a bank that kept these core-memory indices."""
    p = inst.provenance
    keep = set(kept)
    if not (keep & set(p.side_a) and keep & set(p.side_b)):
        return "None"
    return "FULL" if set(p.relation) <= keep else "PARTIAL"


@runtime_checkable
class DialogueExtractor(Protocol):
    """A memory system that ingests an instance's multi-session dialogue."""

    @property
    def reads_dialogues(self) -> bool:
        """Always true: what tells the plan to hand it dialogues."""
        ...

    @property
    def name(self) -> str:
        """The memory system's name (``--system``)."""
        ...

    @property
    def resolution_rule(self) -> str:
        """How it resolves a contradiction: ``add-both``, ``latest-wins`` or ``delete``."""
        ...

    def ingest(self, dialogue: Dialogue, instance: ConflictInstance, *, seed: int) -> ExtractedBank:
        """The stored memories after reading the dialogue, labelled against its truth."""
        ...


@dataclass(frozen=True)
class SimDialogueExtractor:
    """Reads a dialogue in windows of sessions; misses and overwrites with known rates."""

    window: int = 5
    p_miss: float = 0.05
    p_miss_relation: float = 0.2
    p_overwrite: float = 0.35
    name: str = "sim-dialogue"
    resolution_rule: str = "latest-wins"
    reads_dialogues: bool = True

    def ingest(self, dialogue: Dialogue, instance: ConflictInstance, *, seed: int) -> ExtractedBank:
        """Extract with a seed derived from (seed, dialogue), so reruns agree."""
        rng = random.Random(stable_int("sim-dialogue", seed, dialogue.dialogue_id))
        sessions = [
            [(t.states, t.revises) for t in s.turns if t.role == "user"] for s in dialogue.sessions
        ]
        kept = dialogue_extract(
            sessions,
            instance.provenance.relation,
            window=self.window,
            p_miss=self.p_miss,
            p_miss_relation=self.p_miss_relation,
            p_overwrite=self.p_overwrite,
            rng=rng,
        )
        memories = tuple(instance.core_memories[i] for i in kept)
        return ExtractedBank(memories, observability_label(instance, kept))


def _words(text: str) -> set[str]:
    return {w.strip(".,;:!?'\"()").lower() for w in text.split()} - {""}


def source_turn(memory: str, turns: Sequence[Turn], *, min_overlap: float = 0.5) -> int | None:
    """Index of the user turn a stored memory came from (``None`` when none matches).

    The turn is the one with the same text, else the one sharing the most words (Jaccard
    ≥ ``min_overlap``).
    """
    norm = " ".join(memory.split()).lower()
    for i, t in enumerate(turns):
        if " ".join(t.text.split()).lower() == norm:
            return i
    best, score = None, 0.0
    mw = _words(memory)
    for i, t in enumerate(turns):
        tw = _words(t.text)
        j = len(mw & tw) / len(mw | tw) if mw | tw else 0.0
        if j > score:
            best, score = i, j
    return best if best is not None and score >= min_overlap else None


def facts_of_memory(
    memory: str, turns: Sequence[Turn], *, min_overlap: float = 0.5
) -> tuple[int, ...]:
    """The facts a stored memory carries: those of the user turn it came from.

    A memory that matches no turn (:func:`source_turn`) carries no known fact.
    """
    i = source_turn(memory, turns, min_overlap=min_overlap)
    return turns[i].states if i is not None else ()


@dataclass
class MemorySystemExtractor:
    """A real memory system (:class:`llm.memory_systems.MemorySystem`) reading a dialogue.

    Adjacent sessions are fed in windows of up to ``window`` sessions (one ``add`` each)
    under a user id of their own; the stored memories are read back, each traced to the
    user turn it came from (:func:`facts_of_memory`), and the bank is labelled against the
    dialogue's truth.
    """

    system: MemorySystem
    window: int = 5
    reads_dialogues: bool = True

    @property
    def name(self) -> str:
        """The memory system's name."""
        return self.system.name

    @property
    def resolution_rule(self) -> str:
        """The memory system's contradiction rule."""
        return self.system.resolution_rule

    def ingest(self, dialogue: Dialogue, instance: ConflictInstance, *, seed: int) -> ExtractedBank:
        """Feed the dialogue window by window and label what the system stored."""
        user_id = f"{dialogue.dialogue_id}-{seed}"
        sessions = dialogue.sessions
        for start in range(0, len(sessions), max(1, self.window)):
            turns = [
                (t.role, t.text) for s in sessions[start : start + self.window] for t in s.turns
            ]
            self.system.add(turns, user_id=user_id)
        user_turns = [t for s in sessions for t in s.turns if t.role == "user"]
        # A store returns its memories in no fixed order (Mem0's ids are random), but the
        # rendered bank — and so the prompt and its cache key — must not change between
        # reruns: order them by the dialogue turn they came from, then by text.
        traced = [(source_turn(m, user_turns), m) for m in self.system.memories(user_id=user_id)]
        traced.sort(key=lambda im: (len(user_turns) if im[0] is None else im[0], im[1]))
        memories = tuple(m for _, m in traced)
        facts = tuple(() if i is None else user_turns[i].states for i, _ in traced)
        kept = {f for fs in facts for f in fs}
        return ExtractedBank(memories, observability_label(instance, sorted(kept)), facts)


EXTRACTORS: dict[str, MemoryExtractor | DialogueExtractor] = {
    "sim-lossy": SimLossyExtractor(),
    "sim-dialogue": SimDialogueExtractor(),
}


def reads_dialogues(extractor: MemoryExtractor | DialogueExtractor) -> bool:
    """Whether the extractor ingests dialogues (rather than curated memories)."""
    return bool(getattr(extractor, "reads_dialogues", False))


def get_extractor(name: str) -> MemoryExtractor | DialogueExtractor:
    """A registered extractor by name.

    Raises:
        InputError: unknown name.
    """
    try:
        return EXTRACTORS[name]
    except KeyError:
        # mem0 is opened with an endpoint (study.conflicts.real_systems), not registered
        known = ", ".join(sorted([*EXTRACTORS, "mem0"]))
        raise InputError(f"Unknown memory system {name!r}; available: {known}.") from None


def extract_bank(
    extractor: MemoryExtractor | DialogueExtractor,
    instance: ConflictInstance,
    *,
    seed: int,
    dialogue: Dialogue | None = None,
) -> ExtractedBank:
    """Run an extractor on one instance (a dialogue extractor needs its dialogue).

    Raises:
        InputError: a dialogue extractor without a dialogue for the instance.
    """
    if isinstance(extractor, DialogueExtractor) and reads_dialogues(extractor):
        if dialogue is None:
            raise InputError(
                f"Memory system {extractor.name} reads dialogues; instance "
                f"{instance.instance_id!r} has none."
            )
        return extractor.ingest(dialogue, instance, seed=seed)
    assert isinstance(extractor, MemoryExtractor)
    return extractor.extract(instance, seed=seed)
