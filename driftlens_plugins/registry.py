"""The instrument registry, read from the ``driftlens.instruments`` entry-point group.

Every installed distribution may announce instruments: an entry point whose value is an
:class:`~driftlens_plugins.instrument.InstrumentPlugin` object
(``conflicts = "study.conflicts.plugin:PLUGIN"``). The registry loads them once per process,
checks them and orders them (``order``, then name). A broken entry point stops the workbench
with one sentence naming it, rather than an instrument silently missing.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points

from driftlens_plugins.instrument import InstrumentPlugin
from storage.errors import ConfigError

#: The entry-point group instruments are announced in (``pyproject.toml``).
ENTRY_POINT_GROUP = "driftlens.instruments"


def _load(entry: EntryPoint) -> InstrumentPlugin:
    where = f"entry point {entry.name!r} ({entry.value})"
    try:
        plugin = entry.load()
    except Exception as exc:  # any import failure of a third-party plugin: one sentence
        raise ConfigError(
            f"Instrument {where} could not be loaded: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(plugin, InstrumentPlugin):
        raise ConfigError(
            f"Instrument {where} is a {type(plugin).__name__}, not an InstrumentPlugin."
        )
    if plugin.name != entry.name:
        raise ConfigError(f"Instrument {where} names itself {plugin.name!r}; the two must agree.")
    return plugin


@functools.cache
def instruments() -> tuple[InstrumentPlugin, ...]:
    """Every installed instrument, in listing order (loaded once per process).

    Raises:
        ConfigError: an entry point does not load, is not a plugin, or two distributions
            announce the same name differently.
    """
    found: dict[str, InstrumentPlugin] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        plugin = _load(entry)
        if plugin.name in found and found[plugin.name] != plugin:
            # an editable install and a copy on the path may both announce one plugin:
            # the same object is fine, two different ones are a conflict
            raise ConfigError(f"Two installed packages announce instrument {plugin.name!r}.")
        found[plugin.name] = plugin
    return tuple(sorted(found.values(), key=lambda p: (p.order, p.name)))


def refresh() -> tuple[InstrumentPlugin, ...]:
    """Read the entry points again (after a package is installed or put on the path)."""
    instruments.cache_clear()
    return instruments()


def get_instrument(name: str) -> InstrumentPlugin:
    """The instrument called ``name``.

    Raises:
        ConfigError: no installed instrument has that name.
    """
    for plugin in instruments():
        if plugin.name == name:
            return plugin
    known = ", ".join(p.name for p in instruments())
    raise ConfigError(f"Unknown instrument {name!r}; installed: {known}.")


def part_modules(part: str) -> tuple[str, ...]:
    """The modules every instrument names for one part (``sim_module``, ``human_module``, …).

    Args:
        part: a module-valued attribute of :class:`InstrumentPlugin`.
    """
    return tuple(m for p in instruments() if (m := getattr(p, part)) is not None)
