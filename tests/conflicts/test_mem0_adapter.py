"""Mem0 (real package) reads a sample dialogue through the served simulator, offline."""

from __future__ import annotations

import importlib.util
import secrets
from pathlib import Path

import pytest

from study.conflicts.dialogues import read_dialogues
from study.conflicts.items import load_sample_banks
from study.conflicts.tracks import MemorySystemExtractor, facts_of_memory

# find_spec, not importorskip: mem0 must first be imported by the adapter, which switches
# its telemetry off (mem0 reads MEM0_TELEMETRY once, at import).
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mem0") is None,
    reason="the mem0 adapter test needs mem0ai (in the dev extra: scripts/setup.sh dev)",
)


def test_mem0_keeps_both_sides_add_only_over_http(tmp_path: Path) -> None:
    from llm.memory_systems import Mem0System, MemorySystem
    from study.sim_endpoint import SimProcess

    banks = {b.instance_id: b for b in load_sample_banks()}
    dialogues = read_dialogues(None, banks.values()).by_instance
    key = secrets.token_urlsafe(12)
    with SimProcess(api_key=key) as url:
        system = Mem0System(base_url=url, api_key=key, model="sim/default", store=tmp_path / "m")
        assert isinstance(system, MemorySystem)
        ext = MemorySystemExtractor(system, window=2)
        for iid in ("p04_coffee_intake",):
            d = dialogues[iid]
            bank = ext.ingest(d, banks[iid], seed=0)
            user_turns = [t for s in d.sessions for t in s.turns if t.role == "user"]
            stating = {t.text for t in user_turns if t.states}
            # Mem0 v3 is ADD-only: the relapse does not delete the quit phase, so both
            # sides and every relation survive (the simulated LLM extracts literally).
            assert stating <= set(bank.memories)
            assert bank.observability == "FULL"
            kept = {f for m in bank.memories for f in facts_of_memory(m, user_turns)}
            assert kept == set(range(len(banks[iid].core_memories)))
        # memories are stored per user: a second dialogue does not see the first one's
        assert len(system.memories(user_id="nobody")) == 0
