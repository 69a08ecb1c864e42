"""The instrument registry: each instrument's CLI groups, pages and plug-in modules.

An instrument is one folder (``study/<instrument>/``, see ``docs/adding-an-instrument.md``)
plus its front-end parts. This registry is what the front ends read: the CLI adds every
instrument's command modules (:func:`cli_modules`), the router its pages
(:func:`instrument_pages`), and registering an instrument names its simulator and human-study
modules to the generic rooms' own registries (:func:`llm.sim.registry.add_instrument_module`,
:func:`annotation.kinds.add_kind_module`), which import them on their first lookup.

The four built-in instruments are listed below. Another one is added without editing any
shared module: a module that calls :func:`register_instrument` when imported, named in
``DRIFTLENS_INSTRUMENTS`` (comma-separated module names; imported by :func:`load_extensions`
before the CLI or the router reads the registry), or imported by whoever builds the app
(a test).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Comma-separated modules that register more instruments when imported.
EXTENSIONS_ENV = "DRIFTLENS_INSTRUMENTS"
PAGES_DIR = Path(__file__).resolve().parent / "pages"
SECTION = "Instruments"


@dataclass(frozen=True)
class InstrumentPage:
    """One page of an instrument: its script, navigation title and Material icon."""

    path: Path
    title: str
    icon: str = ":material/science:"


@dataclass(frozen=True)
class Instrument:
    """An instrument's front-end parts and the modules that plug it into the generic rooms.

    Attributes:
        name: short name (``conflicts``), the ``study/<name>/`` folder of a built-in.
        title: what the workbench calls it.
        cli_modules: modules exposing ``register(app: typer.Typer)`` (its command groups).
        pages: its pages, listed under :data:`SECTION` in the navigation.
        sim_module: module registering its simulator presets and task handlers.
        human_module: module registering its Label Studio study kinds.
    """

    name: str
    title: str
    cli_modules: tuple[str, ...] = ()
    pages: tuple[InstrumentPage, ...] = ()
    sim_module: str | None = None
    human_module: str | None = None


def _built_in(name: str, title: str, icon: str) -> Instrument:
    """A built-in instrument with its own page and command group, every part named for its
    folder: ``study/<name>/sim`` and ``human``, ``app/cli/<name>_cmds``, ``pages/<name>.py``
    (navigation title: the instrument's)."""
    return Instrument(
        name,
        title,
        cli_modules=(f"app.cli.{name}_cmds",),
        pages=(InstrumentPage(PAGES_DIR / f"{name}.py", title, icon),),
        sim_module=f"study.{name}.sim",
        human_module=f"study.{name}.human",
    )


#: The built-in instruments. Reasoning drift, the seed instrument, has its pages in the
#: Workbench section and its commands among the generic ones (generate, label, analyze).
BUILT_IN: tuple[Instrument, ...] = (
    Instrument(
        "reasoning",
        "Reasoning drift",
        sim_module="study.reasoning.sim",
        human_module="study.reasoning.human",
    ),
    _built_in("conflicts", "Memory conflicts", ":material/call_split:"),
    _built_in("disposition", "Disposition drift", ":material/trending_down:"),
    _built_in("sources", "Source reliance", ":material/fact_check:"),
)

_REGISTERED: dict[str, Instrument] = {i.name: i for i in BUILT_IN}
_loaded_extensions: set[str] = set()


def register_instrument(instrument: Instrument) -> None:
    """Add an instrument (again: replaces it) and name its plug-in modules to the rooms.

    Raises:
        ValueError: the name is a built-in instrument's.
    """
    if instrument.name in {i.name for i in BUILT_IN}:
        raise ValueError(f"instrument {instrument.name!r} is built in")
    # imported here: the CLI reads this registry before any command runs, and these pull in
    # the database and model layers (``driftlens --help`` stays fast)
    from annotation.kinds import add_kind_module
    from llm.sim.registry import add_instrument_module

    _REGISTERED[instrument.name] = instrument
    if instrument.sim_module is not None:
        add_instrument_module(instrument.sim_module)
    if instrument.human_module is not None:
        add_kind_module(instrument.human_module)


def load_extensions(environ: Mapping[str, str] | None = None) -> None:
    """Import the modules named in :data:`EXTENSIONS_ENV` (each registers an instrument)."""
    env = os.environ if environ is None else environ
    for module in (m.strip() for m in env.get(EXTENSIONS_ENV, "").split(",")):
        if module and module not in _loaded_extensions:
            _loaded_extensions.add(module)
            importlib.import_module(module)


def instruments() -> tuple[Instrument, ...]:
    """Every instrument, the built-in ones first."""
    load_extensions()
    return tuple(_REGISTERED.values())


def cli_modules() -> tuple[str, ...]:
    """The command modules of every instrument, in registration order."""
    return tuple(m for i in instruments() for m in i.cli_modules)


def instrument_pages() -> tuple[InstrumentPage, ...]:
    """The pages of every instrument, in registration order."""
    return tuple(p for i in instruments() for p in i.pages)
