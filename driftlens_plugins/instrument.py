"""The plugin object: every part an instrument brings to the shared rooms, named by module.

Parts are named, not imported: a plugin object is cheap to load (the CLI reads every plugin
before ``--help``), and each room imports the part it needs on its first lookup. A module
name resolves the same way for a built-in (``study.conflicts.sim``) as for an instrument in
another installed package.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from storage.errors import ConfigError

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class InstrumentPage:
    """One Streamlit page of an instrument.

    Attributes:
        module: the page script as an importable module name (``app.pages.conflicts``); the
            router runs its file, it is never imported.
        title: the navigation title.
        icon: a Material icon (``:material/science:``).
    """

    module: str
    title: str
    icon: str = ":material/science:"

    @property
    def path(self) -> Path:
        """The page script's file, found without importing it.

        Raises:
            ConfigError: no module of that name is installed.
        """
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            raise ConfigError(f"Instrument page module {self.module!r} is not installed.")
        return Path(spec.origin).resolve()


@dataclass(frozen=True)
class InstrumentPlugin:
    """An instrument, as the shared rooms see it.

    Attributes:
        name: short name, the ``--instrument`` value and the simulator family
            (lowercase letters, digits and ``_``).
        title: what the workbench calls it (``Memory conflicts``).
        order: where it is listed among the instruments (smaller first; ties by name).
        cli_modules: modules exposing ``register(app: typer.Typer)`` (its command groups).
        pages: its pages, listed in the navigation's Instruments section.
        sim_module: module that registers its simulator presets and task handlers when
            imported (:mod:`llm.sim.registry`).
        human_module: module that registers its Label Studio study kinds when imported
            (:mod:`annotation.kinds`).
        compare_module: module that registers its comparison adapter when imported
            (:mod:`study.compare.registry`); ``None``: its runs cannot be compared.
    """

    name: str
    title: str
    order: int = 100
    cli_modules: tuple[str, ...] = ()
    pages: tuple[InstrumentPage, ...] = ()
    sim_module: str | None = None
    human_module: str | None = None
    compare_module: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(
                f"Instrument name {self.name!r} must be lowercase letters, digits and '_', "
                "starting with a letter."
            )
        if not self.title.strip():
            raise ConfigError(f"Instrument {self.name!r} has an empty title.")
