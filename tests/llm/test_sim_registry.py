"""Instrument presets live in their own registry, not as copies in the drift table."""

from __future__ import annotations

import pytest

from llm.sim.presets import SimPreset
from llm.sim.registry import all_presets, families, family_of, get_preset, register_presets
from storage.errors import ConfigError
from study.conflicts.sim.judge import JUDGE_PROFILES
from study.conflicts.sim.moves import OPT_IN_PROFILES, RESPONDER_PROFILES
from study.conflicts.sim.presets import DESCRIPTIONS
from study.reasoning.sim.presets import PRESETS


def test_drift_table_holds_only_drift_presets() -> None:
    assert set(PRESETS) == {"default", "null", "strong", "hostile"}
    assert not any(n.startswith(("mc-", "judge-")) for n in PRESETS)


def test_conflict_presets_resolve_and_match_the_profiles() -> None:
    fams = families()
    assert set(fams["conflicts"]) == (
        set(RESPONDER_PROFILES) | set(OPT_IN_PROFILES) | set(JUDGE_PROFILES)
    )
    assert set(fams["conflicts"]) == set(DESCRIPTIONS)
    for name in DESCRIPTIONS:
        p = get_preset(f"sim/{name}")
        assert family_of(name) == "conflicts"
        assert p.class_doses == {} and p.description == DESCRIPTIONS[name]
        assert p != PRESETS["default"].model_copy(update={"name": name})  # not a drift copy
    assert set(all_presets()) == set(PRESETS) | set(DESCRIPTIONS)


def test_a_taken_name_is_refused_and_unknown_lists_every_family() -> None:
    with pytest.raises(ValueError, match="already belongs"):
        register_presets("other", [SimPreset(name="mc-quiet", class_doses={})])
    with pytest.raises(ValueError, match="already belongs"):
        register_presets("other", [SimPreset(name="default", class_doses={})])
    with pytest.raises(ConfigError) as err:
        get_preset("sim/nope")
    assert "judge-strict" in str(err.value) and "default" in str(err.value)


def test_a_stepped_answer_imports_reasoning_drifts_simulator_alone() -> None:
    # a fresh interpreter: this one imported every instrument already
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from llm.sim.backend import SimBackend\n"
        "from llm.types import ChatMessage, ChatRequest, SamplingParams\n"
        "req = ChatRequest(messages=(ChatMessage(role='user', content='Rent or buy?'),),"
        " sampling=SamplingParams(seed=1))\n"
        "assert SimBackend('default').answer(req).text\n"
        "print(sorted(m for m in sys.modules if m.endswith('.sim') and m.startswith('study.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "['study.reasoning.sim']"
