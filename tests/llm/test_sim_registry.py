"""Instrument presets live in their own registry, not as copies in the drift table."""

from __future__ import annotations

import pytest

from llm.sim.presets import PRESETS, SimPreset
from llm.sim.registry import all_presets, families, family_of, get_preset, register_presets
from storage.errors import ConfigError
from study.conflicts.sim.judge import JUDGE_PROFILES
from study.conflicts.sim.moves import RESPONDER_PROFILES
from study.conflicts.sim.presets import DESCRIPTIONS


def test_drift_table_holds_only_drift_presets() -> None:
    assert set(PRESETS) == {"default", "null", "strong"}
    assert not any(n.startswith(("mc-", "judge-")) for n in PRESETS)


def test_conflict_presets_resolve_and_match_the_profiles() -> None:
    fams = families()
    assert set(fams["conflicts"]) == set(RESPONDER_PROFILES) | set(JUDGE_PROFILES)
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
