"""The plugin object: every part an instrument brings to the shared rooms, named by module.

Parts are named, not imported: a plugin object is cheap to load (the CLI reads every plugin
before ``--help``), and each room imports the part it needs on its first lookup. A module
name resolves the same way for a built-in (``study.conflicts.sim``) as for an instrument in
another installed package.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.errors import ConfigError

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class InstrumentPage:
    """One Streamlit page of an instrument.

    Attributes:
        module: the page script as an importable module name (``app.pages.conflicts``); the
            router runs its file, it is never imported.
        title: the navigation title.
        icon: a Material icon (``:material/science:``).
        section: the navigation section it is listed in (``None``: the Instruments
            section); a section the navigation does not know is added before "Studies".
        after: the file name of the page in that section it follows (``"runs.py"``);
            ``None`` or a page not there: at the section's end.
    """

    module: str
    title: str
    icon: str = ":material/science:"
    section: str | None = None
    after: str | None = None

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
class ResultPage:
    """Where the Jobs page links a finished job of one kind.

    Attributes:
        kind: the job's kind (its command path, ``generate``).
        page: the page's file under ``app/pages`` (``runs.py``).
        param: the query key the page opens a result by; its value is read from the job's
            scope or result (``run``).
    """

    kind: str
    page: str
    param: str


@dataclass(frozen=True)
class PresetListing:
    """How ``driftlens sim presets`` shows an instrument's simulator presets.

    Attributes:
        heading: the line above its presets (a table's title when ``columns`` is given).
        columns: a table's columns (the first is the preset); ``()``: no table.
        rows: the table's rows, one text per column.
        lines: one line per preset (``sim/name: what it does``), printed after the table.
        families: the preset families of the simulator registry this listing shows, so the
            generic listing of registered families leaves them out.
    """

    heading: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    lines: tuple[str, ...] = ()
    families: tuple[str, ...] = ()


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
        sim_server: ``module:function`` the served simulator calls once at its start with
            the perturbation catalog, returning what the instrument adds to the server
            (:class:`study.sim_endpoint.ServerParts`: known-truth answerers, the memory-line
            classifier).
        robustness: ``module:function``, the instrument's judge-robustness adapter
            (``driftlens judges robustness``): ``fn(run, ask) -> RobustnessResult`` with
            ``ask`` a :class:`study.judge_robustness.service.RobustnessAsk`; ``None``: it
            has no judge or labeler to test.
        result_pages: where the Jobs page shows the result of each kind of job the
            instrument runs.
        cli_demo: ``module:function`` that ``driftlens demo`` calls, in listing order, as
            ``fn(session=, workspace=, bootstrap=, samples=, stage=)``: runs the
            instrument's simulated demo and returns a
            :class:`~driftlens_plugins.demo.DemoOutcome` (its summary lines, stage times,
            reports and ``Next:`` lines), which the command prints; it prints nothing itself
            (``stage(name)`` gives a progress callback the command draws).
        tier_impact: ``module:function`` the refinement impact preview calls for each
            stored analysis a proposed ontology rewrite could touch, as
            ``fn(ask, session=)`` with ``ask`` an :class:`ontology.refinement_impact.TierAsk`;
            returns a :class:`ontology.refinement_impact.TierImpact`, or ``None`` when the
            analysis is not the instrument's. ``None``: it stores no such analysis.
        jobs: ``module:attribute``, a mapping of job kind → function the study-level job
            runner calls (``python -m study.jobs.run INSTRUMENT KIND JSON``) as
            ``fn(args, *, session, settings)``, returning the job's result (plain JSON);
            :func:`study.jobs.submit_study_job` starts one. ``None``: it has no such jobs.
        study_kit: ``module:function`` returning its
            :class:`~driftlens_plugins.kit.StudyKit` (its smallest simulated study), which
            the behavioural instrument checks drive; ``None``: only the structural checks
            apply.
        sim_presets: ``module:function`` returning a :class:`PresetListing`, how
            ``driftlens sim presets`` shows the presets its simulator answers; ``None``:
            its presets (if any) are listed by their registered family only.
        run_listing: ``module:function`` the Runs page calls as ``fn(session=)``, returning
            its stored runs as :class:`~driftlens_plugins.run_listing.RunLine` rows (newest
            first), listed in a table of its own with a link to the page that shows each;
            ``None``: its runs are not listed there.
        runs_panel: ``module:function`` the Runs page calls with no argument under the
            listings, drawing the instrument's own section of that page (a launch form, a
            run browser) with Streamlit; it opens its own sessions and returns (never
            ``st.stop()``: a panel after it still draws). ``None``: it has none.
    """

    name: str
    title: str
    order: int = 100
    cli_modules: tuple[str, ...] = ()
    pages: tuple[InstrumentPage, ...] = ()
    sim_module: str | None = None
    human_module: str | None = None
    compare_module: str | None = None
    sim_server: str | None = None
    robustness: str | None = None
    result_pages: tuple[ResultPage, ...] = ()
    cli_demo: str | None = None
    tier_impact: str | None = None
    jobs: str | None = None
    study_kit: str | None = None
    sim_presets: str | None = None
    run_listing: str | None = None
    runs_panel: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(
                f"Instrument name {self.name!r} must be lowercase letters, digits and '_', "
                "starting with a letter."
            )
        if not self.title.strip():
            raise ConfigError(f"Instrument {self.name!r} has an empty title.")
        for part in ("sim_server", "robustness", "cli_demo", "tier_impact", "jobs", "study_kit",
                     "sim_presets", "run_listing", "runs_panel"):  # fmt: skip
            ref = getattr(self, part)
            if ref is not None and not _REF.match(ref):
                raise ConfigError(
                    f"Instrument {self.name!r}: {part} {ref!r} must be 'module:function'."
                )


def load_ref(ref: str) -> Any:
    """The object a ``module:attribute`` reference names (the module imported on demand).

    Raises:
        ConfigError: the module or the attribute does not exist.
    """
    module, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"Instrument part {ref!r} could not be loaded: {exc}") from exc
