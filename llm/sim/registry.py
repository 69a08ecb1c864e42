"""Simulator presets by family: the built-in drift presets and those instruments register.

The drift presets (:data:`llm.sim.presets.PRESETS`) describe reasoning-drift doses. An
instrument whose simulated models answer through its own task handlers (memory conflicts:
``sim/mc-*`` responders, ``sim/judge-*`` judges) registers its presets here under its own
family with :func:`register_presets`, from its own module — so ``sim/<name>`` resolves
everywhere (in-process backend, served simulator, ``driftlens sim presets``) without
touching the drift table. A name belongs to exactly one family; registering a taken name
is refused.

Instrument preset modules are listed in :data:`INSTRUMENT_PRESET_MODULES` and imported on
the first lookup, so a preset resolves whether or not its instrument was imported yet.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from llm.sim.presets import PRESETS, SimPreset

DRIFT_FAMILY = "drift"
#: Modules that call :func:`register_presets` when imported (one per instrument).
INSTRUMENT_PRESET_MODULES: tuple[str, ...] = ("llm.sim.conflict_presets",)

_FAMILIES: dict[str, dict[str, SimPreset]] = {}
_loaded = False


def register_presets(family: str, presets: Iterable[SimPreset]) -> None:
    """Register an instrument's presets under ``family``.

    Re-registering the same preset is a no-op (module reloads); a name already used by the
    drift presets or by another family raises ``ValueError``.
    """
    if family == DRIFT_FAMILY:
        raise ValueError("the drift family is the built-in table in llm/sim/presets.py")
    table = _FAMILIES.setdefault(family, {})
    for p in presets:
        owner = family_of(p.name, load=False)
        if owner is not None and owner != family:
            raise ValueError(f"simulator preset {p.name!r} already belongs to family {owner!r}")
        table[p.name] = p


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in INSTRUMENT_PRESET_MODULES:
            importlib.import_module(module)


def families() -> dict[str, dict[str, SimPreset]]:
    """Every family and its presets, the drift family first."""
    _load()
    return {DRIFT_FAMILY: dict(PRESETS), **{f: dict(t) for f, t in _FAMILIES.items()}}


def all_presets() -> dict[str, SimPreset]:
    """Every preset by name (drift and registered)."""
    out: dict[str, SimPreset] = {}
    for table in families().values():
        out.update(table)
    return out


def family_of(name: str, *, load: bool = True) -> str | None:
    """The family a preset name belongs to (``None`` when unknown)."""
    if load:
        _load()
    if name in PRESETS:
        return DRIFT_FAMILY
    for family, table in _FAMILIES.items():
        if name in table:
            return family
    return None


def lookup(name: str) -> SimPreset | None:
    """The preset called ``name`` in any family."""
    if name in PRESETS:
        return PRESETS[name]
    _load()
    for table in _FAMILIES.values():
        if name in table:
            return table[name]
    return None
