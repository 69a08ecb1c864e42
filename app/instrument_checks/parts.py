"""The structural checks: every part a plugin names loads and has the shape the rooms use.

Every part the plugin names loads; its pages compile and its result pages exist; each
command module adds a group or command whose ``--help`` works; its simulator registers
presets or task handlers of its own; each of its human-study kinds has a Label Studio
config that parses, a result type and a summary; its compare adapter lists runs, refuses
an unknown run in one sentence and names the tables its runs are read from; its robustness
adapter, demo, jobs and study kit take the arguments the shared rooms pass.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import xml.etree.ElementTree as ET
from collections.abc import Callable

from sqlmodel import Session

from app.instruments import PAGES_DIR
from driftlens_plugins import InstrumentPlugin, load_ref
from storage.errors import DriftLensError
from storage.settings import Settings


def _in(module: str | None, part: str) -> bool:
    """Whether ``module`` is the part's module or lies in it (a part may be a package)."""
    return module is not None and (module == part or module.startswith(part + "."))


def check_parts_load(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Every module the plugin names imports, and every ``module:function`` is callable."""
    modules = [*plugin.cli_modules, plugin.sim_module, plugin.human_module, plugin.compare_module]
    for module in filter(None, modules):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise AssertionError(
                f"{plugin.name}: module {module!r} does not import: {exc}"
            ) from exc
    for part in ("sim_server", "robustness", "cli_demo", "tier_impact", "run_listing",
                 "runs_panel"):  # fmt: skip
        ref = getattr(plugin, part)
        if ref is not None:
            assert callable(load_ref(ref)), f"{plugin.name}: {part} {ref!r} is not callable"


def check_pages(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Each page's script exists and compiles; each result page is one of the workbench's."""
    for page in plugin.pages:
        path = page.path
        assert path.is_file(), f"{plugin.name}: page {page.module!r} has no file"
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        assert page.title.strip(), f"{plugin.name}: page {page.module!r} has no title"
    for result in plugin.result_pages:
        assert (PAGES_DIR / result.page).is_file(), (
            f"{plugin.name}: result page {result.page!r} of job kind {result.kind!r} is not a "
            "workbench page"
        )


def check_cli_groups(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Each command module adds a group or a command, and its ``--help`` answers."""
    import typer
    from typer.testing import CliRunner

    for module in plugin.cli_modules:
        app = typer.Typer()

        @app.callback()
        def _root() -> None:  # a callback keeps one added command a sub-command
            pass

        importlib.import_module(module).register(app)
        names = [g.name for g in app.registered_groups] + [
            c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands
        ]
        assert names, f"{plugin.name}: {module}.register adds no command"
        for name in names:
            result = CliRunner().invoke(app, [str(name), "--help"])
            assert result.exit_code == 0, f"{plugin.name}: `{name} --help` failed: {result.output}"


def check_simulator(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """The simulator module registers presets (a family named after the instrument) or task
    handlers of its own, so ``sim/<preset>`` and its task markers resolve."""
    import llm.sim.tasks as tasks
    from llm.sim.registry import families, load_instruments

    assert plugin.sim_module is not None
    load_instruments()
    own_tasks = [n for n, h in tasks._HANDLERS.items() if _in(h.__module__, plugin.sim_module)]
    presets = families().get(plugin.name, {})
    assert own_tasks or presets, (
        f"{plugin.name}: {plugin.sim_module} registers no preset family {plugin.name!r} and "
        "no task handler"
    )
    if plugin.sim_presets is not None:
        from driftlens_plugins import PresetListing

        listing = load_ref(plugin.sim_presets)()
        assert isinstance(listing, PresetListing), (
            f"{plugin.name}: sim_presets must return a PresetListing, not {type(listing)}"
        )
        assert listing.lines or listing.rows, f"{plugin.name}: its preset listing is empty"
        assert all(len(r) == len(listing.columns) for r in listing.rows), (
            f"{plugin.name}: a preset listing's row does not match its columns"
        )


def check_human_kinds(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Each human-study kind registered from the module has a config Label Studio can
    parse (its dynamic parts filled), a spec named for it and an :class:`ApplyResult` type."""
    from annotation.kinds import ApplyResult, label_config, study_kinds

    assert plugin.human_module is not None
    part = plugin.human_module
    own = {n: k for n, k in study_kinds().items() if _in(k.build_tasks.__module__, part)}
    assert own, f"{plugin.name}: {plugin.human_module} registers no study kind"
    for name, kind in own.items():
        assert kind.spec.name == name, f"{plugin.name}: kind {name!r} has spec {kind.spec.name!r}"
        try:
            ET.fromstring(label_config(name))
        except ET.ParseError as exc:
            raise AssertionError(f"{plugin.name}: {name}'s label config: {exc}") from exc
        assert issubclass(kind.result_type, ApplyResult), f"{plugin.name}: {name}'s result type"


def check_compare(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """The compare adapter is registered under the instrument's name, lists runs, names the
    tables its runs are read from and refuses an unknown run with one sentence."""
    from study.compare import get_adapter

    adapter = get_adapter(plugin.name)
    assert adapter.name == plugin.name, f"{plugin.name}: adapter named {adapter.name!r}"
    assert adapter.headline.strip(), f"{plugin.name}: the adapter has no headline"
    tables = adapter.revision_tables
    assert tables and all("id" in t.__table__.c for t in tables), (  # type: ignore[attr-defined]
        f"{plugin.name}: revision_tables must name tables with an id"
    )
    assert isinstance(adapter.list_runs(session=session), list)
    from study.compare.types import CompareOptions

    try:
        adapter.load("no-such-run-\u2603", session=session, options=CompareOptions())
    except DriftLensError as exc:
        message = str(exc)
        assert message and "\n" not in message, f"{plugin.name}: {message!r} is not one line"
    else:
        raise AssertionError(f"{plugin.name}: loading an unknown run raised nothing")


def _takes(func: Callable[..., object], *names: str) -> bool:
    params = inspect.signature(func).parameters
    return all(n in params for n in names) or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def check_entry_points_signatures(
    plugin: InstrumentPlugin, session: Session, settings: Settings
) -> None:
    """The robustness adapter takes ``(run, ask)``, the demo ``session``, ``workspace``,
    ``bootstrap``, ``samples`` and ``stage``, the server parts the catalog, the tier impact
    ``(ask, session=)``, the run listing ``session``, the Runs page's panel nothing: what
    the shared rooms pass."""
    if plugin.robustness is not None:
        params = inspect.signature(load_ref(plugin.robustness)).parameters
        assert len(params) == 2, f"{plugin.name}: robustness must take (run, ask)"
    if plugin.cli_demo is not None:
        demo_args = ("session", "workspace", "bootstrap", "samples", "stage")
        assert _takes(load_ref(plugin.cli_demo), *demo_args), (
            f"{plugin.name}: cli_demo must take session=, workspace=, bootstrap=, samples=, stage="
        )
    if plugin.run_listing is not None:
        assert _takes(load_ref(plugin.run_listing), "session"), (
            f"{plugin.name}: run_listing must take session="
        )
    if plugin.runs_panel is not None:
        params = inspect.signature(load_ref(plugin.runs_panel)).parameters
        assert not [p for p in params.values() if p.default is inspect.Parameter.empty
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)], (
            f"{plugin.name}: runs_panel must take no argument"
        )  # fmt: skip
    if plugin.sim_server is not None:
        params = inspect.signature(load_ref(plugin.sim_server)).parameters
        assert len(params) == 1, f"{plugin.name}: sim_server must take the catalog"
    if plugin.tier_impact is not None:
        assert _takes(load_ref(plugin.tier_impact), "ask", "session"), (
            f"{plugin.name}: tier_impact must take (ask, session=)"
        )
    if plugin.jobs is not None:
        from collections.abc import Mapping

        jobs = load_ref(plugin.jobs)
        assert isinstance(jobs, Mapping) and jobs, (
            f"{plugin.name}: jobs must map kinds to functions"
        )
        for kind, fn in jobs.items():
            assert _takes(fn, "session", "settings"), (
                f"{plugin.name}: job {kind!r} must take (args, *, session=, settings=)"
            )
    if plugin.study_kit is not None:
        from driftlens_plugins import StudyKit

        kit = load_ref(plugin.study_kit)()
        assert isinstance(kit, StudyKit), f"{plugin.name}: study_kit must return a StudyKit"
        assert len(set(kit.models)) == 2, f"{plugin.name}: the kit's two models must differ"
