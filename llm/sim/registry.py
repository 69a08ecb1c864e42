"""Simulator presets by family: the stepped-answer dose presets and those instruments register.

Every instrument registers its presets here under its own family with
:func:`register_presets`, from its own simulator module, so ``sim/<name>`` resolves
everywhere (in-process backend, served simulator, ``driftlens sim presets``). A name belongs
to exactly one family; registering a taken name is refused.

Plugins, not imports: ``llm`` never imports an instrument. Each instrument's simulator is its
plugin's ``sim_module`` (:class:`~driftlens_plugins.instrument.InstrumentPlugin`); it registers
its presets here and its task handlers in :mod:`llm.sim.tasks` when imported. The instrument
whose answers are stepped also registers the responder that answers every conversation
without a task marker (:func:`register_responder`), its dose presets under
:data:`DRIFT_FAMILY`, and the sentence bank its steps come from (:func:`register_step_bank`,
read back by the ontology's simulated labeler). The installed instruments' modules are
imported by :func:`load_instruments` on the first lookup of a preset, a task or the
responder, so each resolves whether or not its instrument was imported yet, in the process
that serves the simulator as in the one that runs a study.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence

from driftlens_plugins.registry import part_modules
from llm.sim.presets import SimPreset
from llm.sim.response import StepResponder
from llm.specs import preset_name
from storage.errors import ConfigError

#: The family of the stepped responder's dose presets (reasoning drift's), listed first.
DRIFT_FAMILY = "drift"

_FAMILIES: dict[str, dict[str, SimPreset]] = {}
_loaded: set[str] = set()
# the one stepped responder and its sentence bank (reasoning drift's, study/reasoning/sim)
_responder: list[StepResponder] = []
_step_bank: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {}


def load_instruments(until: Callable[[], bool] | None = None) -> None:
    """Import the instrument simulator modules not imported yet (they register themselves).

    Args:
        until: Stop as soon as this holds (checked before each import), so a lookup that one
            instrument answers imports no more than it needs: the stepped responder is
            that of the first instrument listed, and the others (seconds of
            imports between them) load only when a preset or task of theirs is asked for.
    """
    for module in part_modules("sim_module"):
        if until is not None and until():
            return
        if module not in _loaded:
            # marked first: a module that looks a preset up while it registers must not
            # import itself again
            _loaded.add(module)
            importlib.import_module(module)


def register_presets(family: str, presets: Iterable[SimPreset]) -> None:
    """Register an instrument's presets under ``family``.

    Re-registering the same preset is a no-op (module reloads); a name already used by
    another family raises ``ValueError``.
    """
    table = _FAMILIES.setdefault(family, {})
    for p in presets:
        owner = family_of(p.name, load=False)
        if owner is not None and owner != family:
            raise ValueError(f"simulator preset {p.name!r} already belongs to family {owner!r}")
        table[p.name] = p


def families() -> dict[str, dict[str, SimPreset]]:
    """Every family and its presets, the drift family first."""
    load_instruments()
    order = sorted(_FAMILIES, key=lambda family: family != DRIFT_FAMILY)
    return {family: dict(_FAMILIES[family]) for family in order}


def all_presets() -> dict[str, SimPreset]:
    """Every preset by name (every family's)."""
    out: dict[str, SimPreset] = {}
    for table in families().values():
        out.update(table)
    return out


def family_of(name: str, *, load: bool = True) -> str | None:
    """The family a preset name belongs to (``None`` when unknown)."""
    if load:
        load_instruments()
    for family, table in _FAMILIES.items():
        if name in table:
            return family
    return None


def lookup(name: str) -> SimPreset | None:
    """The preset called ``name`` in any family (importing no more instruments than needed)."""
    load_instruments(until=lambda: family_of(name, load=False) is not None)
    family = family_of(name, load=False)
    return None if family is None else _FAMILIES[family][name]


def get_preset(name: str) -> SimPreset:
    """Return a preset by name (``default`` or ``sim/default``), drift or instrument-registered.

    Raises:
        ConfigError: When no preset has that name.
    """
    key = preset_name(name)
    found = lookup(key)
    if found is None:
        known = ", ".join(sorted(all_presets()))
        raise ConfigError(f"Unknown simulator preset {name!r}; known presets: {known}.")
    return found


def register_responder(responder: StepResponder) -> StepResponder:
    """Register the answerer of conversations that carry no task marker (a decorator).

    One instrument writes stepped answers (reasoning drift); registering again replaces
    it (module reloads).
    """
    _responder[:] = [responder]
    return responder


def stepped_responder() -> StepResponder:
    """The registered stepped responder (the instruments are imported first).

    Raises:
        ConfigError: No instrument registers one.
    """
    if not _responder:
        load_instruments(until=lambda: bool(_responder))
    if not _responder:
        raise ConfigError("No instrument registers the simulator's stepped answers.")
    return _responder[0]


def register_step_bank(leaves: Sequence[str], sentences: Mapping[str, Sequence[str]]) -> None:
    """Register the leaves the stepped answers use and the sentences that express each."""
    _step_bank["steps"] = (tuple(leaves), {k: tuple(v) for k, v in sentences.items()})


def step_bank() -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """``(leaf names in symbol order, sentences by leaf)`` of the stepped answers.

    Raises:
        ConfigError: No instrument registers one.
    """
    if "steps" not in _step_bank:
        load_instruments(until=lambda: "steps" in _step_bank)
    if "steps" not in _step_bank:
        raise ConfigError("No instrument registers the simulator's sentence bank.")
    return _step_bank["steps"]
