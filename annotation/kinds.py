"""The study-kind protocol and its registry: what an instrument gives for each human study.

A study kind is everything the generic Label Studio layer needs to run one kind of human
study without knowing what it is about (the pytest-plugin shape: this module defines the
shape and the registry, the instruments register):

* its **spec** (:class:`~annotation.studies.StudySpec`: questions, answer values, how the
  answers combine) and its **label config** (a Label Studio XML template, with an optional
  step that fills in dynamic parts);
* a **task builder** from a :class:`~annotation.selection.Selection` of stored rows;
* an **apply step** from the aggregated answers (:class:`~annotation.aggregate.StudyAggregate`)
  that writes back what the study decides and returns its **result type**, a frozen
  :class:`ApplyResult` subclass.

Plugins, not imports: ``annotation`` never imports an instrument. Each instrument registers
its kinds from its ``human_module`` (an
:class:`~driftlens_plugins.instrument.InstrumentPlugin` part) when that module is imported;
:func:`load_kinds` imports every installed instrument's on the first lookup.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from sqlmodel import Session

from annotation.aggregate import AggregationConfig, StudyAggregate
from annotation.judge_pairs import CalibrationHook
from annotation.selection import Selection, TaskSpec
from annotation.studies import StudySpec
from driftlens_plugins.registry import part_modules
from storage.errors import InputError


def num(value: float | None, digits: int = 3) -> str:
    """A number as a summary cell shows it (``n/a`` when there is none)."""
    return "n/a" if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True)
class SummaryTable:
    """One table of an apply result's summary: plain text cells, rendered by each front end
    (a Rich table in the CLI, a dataframe on the page); cells are untrusted text."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class ApplySummary:
    """What a front end shows of an apply result: tables, then sentences."""

    lines: tuple[str, ...] = ()
    tables: tuple[SummaryTable, ...] = ()


@dataclass(frozen=True)
class ApplyResult:
    """What ``annotate apply`` did and found; each kind's result type adds its own fields
    and says what to show of them (:meth:`summary`)."""

    study: str
    aggregate: StudyAggregate

    def summary(self) -> ApplySummary:
        """The kind's outcomes for a person to read (none by default; kinds override)."""
        return ApplySummary()

    def payload(self) -> dict[str, Any]:
        """The kind's own outcomes, JSON-ready (every field but ``study`` and ``aggregate``)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("study", "aggregate"):
                continue
            value = getattr(self, f.name)
            out[f.name] = [_plain(v) for v in value] if isinstance(value, tuple) else _plain(value)
        return out


def _plain(value: Any) -> Any:
    # result rows are frozen dataclasses; plain values (keys, numbers) pass as they are
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else value


TaskBuilder = Callable[[Selection, Session], list[TaskSpec]]
Applier = Callable[[StudyAggregate, Session, AggregationConfig], ApplyResult]
#: ``(tasks, session) -> {task key: how much the kind's judges disagree on it, >= 0}``.
DisagreementHook = Callable[[Sequence[TaskSpec], Session], Mapping[str, float]]


@dataclass(frozen=True)
class KeyedBuild:
    """A kind's way to limit a large selection before building any task.

    Building a task reads its texts; a kind whose selections match many rows (one task
    per stored step label, say) lists just the tasks' keys, so the seeded ``limit`` is
    chosen over keys and only the chosen tasks are built.

    Attributes:
        keys: ``(selection, session) -> (key, ref)`` pairs, one per task the selection
            makes, every key distinct, in the builder's order (streamed: never held whole).
        build: ``(selection, session, refs) -> tasks`` for those refs alone.
        count: ``(selection, session) -> int``: how many pairs ``keys`` yields.
    """

    keys: Callable[[Selection, Session], Iterable[tuple[str, Any]]]
    build: Callable[[Selection, Session, Sequence[Any]], list[TaskSpec]]
    count: Callable[[Selection, Session], int]


@dataclass(frozen=True)
class StudyKind:
    """One kind of human study, as an instrument registers it.

    Attributes:
        spec: its questions and answer values (``spec.name`` is the kind's name).
        config: the Label Studio labeling-config template (XML file).
        build_tasks: ``(selection, session) -> tasks``, in a deterministic order.
        apply: ``(aggregate, session, config) -> result`` (writes back what it decides).
        result_type: the :class:`ApplyResult` subclass ``apply`` returns.
        fill_config: fills the template's dynamic parts (e.g. the ontology's leaves).
        keyed: the kind's keys-first path for a limited selection (:class:`KeyedBuild`).
        calibrate: pairs the instrument's judge verdict of each item with the human
            majority (:mod:`annotation.judge_pairs`); ``None``: no judge to calibrate.
        triage_of: set on a kind's triage twin (:func:`triage_name`): the kind whose
            judge-human disagreements its project holds.
        disagreement: ``(tasks, session) -> {task key: d >= 0}``, how much the kind's
            judges disagree on each task (``annotate push --select active=true``);
            ``None``: the kind cannot say.
    """

    spec: StudySpec
    config: Path
    build_tasks: TaskBuilder
    apply: Applier
    result_type: type[ApplyResult] = ApplyResult
    fill_config: Callable[[str], str] | None = None
    keyed: KeyedBuild | None = None
    calibrate: CalibrationHook | None = None
    triage_of: str | None = None
    disagreement: DisagreementHook | None = None

    @property
    def name(self) -> str:
        """The kind's name (``annotate push NAME``)."""
        return self.spec.name


_KINDS: dict[str, StudyKind] = {}
_loaded: set[str] = set()


def triage_name(name: str) -> str:
    """The study holding ``name``'s judge-human disagreements (``driftlens judges triage``)."""
    return f"{name}_triage"


def _triage_twin(kind: StudyKind) -> StudyKind:
    """A judged kind's triage study: the same form, answers, apply and pairing, its own project.

    Its tasks are the judged kind's own (same keys and data), chosen by
    ``driftlens judges triage``, so a selection push is refused in one sentence.
    """
    name = triage_name(kind.name)

    def refuse(_sel: Selection, _session: Session) -> list[TaskSpec]:
        raise InputError(
            f"{name} holds the judge-human disagreements of {kind.name}; push it with "
            f"`driftlens judges triage {kind.name}`."
        )

    spec = replace(
        kind.spec,
        name=name,
        title=f"{kind.spec.title} (triage)",
        summary=f"Judge disagreements first, for a second look. {kind.spec.summary}",
    )

    def fill(text: str) -> str:
        filled = kind.fill_config(text) if kind.fill_config is not None else text
        return with_triage_note(filled)

    return replace(
        kind, spec=spec, build_tasks=refuse, keyed=None, triage_of=kind.name, fill_config=fill
    )


#: What a triage task shows above the study's form: the verdicts that put it in the queue,
#: as plain text (a ``Text`` tag: Label Studio never reads it as markup).
TRIAGE_NOTE = (
    '  <Header value="Why this item is in the triage" size="5"/>\n'
    '  <Text name="triage_note" value="$triage_note"/>\n'
)


def with_triage_note(config: str) -> str:
    """A study's label config with the triage note shown first (inside its first View)."""
    start = config.index("<View")
    head_end = config.index(">", start) + 1
    return config[:head_end] + "\n" + TRIAGE_NOTE + config[head_end:].lstrip("\n")


def register_kind(kind: StudyKind) -> None:
    """Register a study kind; registering the same name again replaces it (module reloads).

    A kind with a judge to calibrate also registers its triage twin (:func:`triage_name`).
    """
    _KINDS[kind.name] = kind
    if kind.calibrate is not None and kind.triage_of is None:
        twin = _triage_twin(kind)
        _KINDS[twin.name] = twin


def register_kinds(
    specs: Mapping[str, StudySpec],
    configs: Path,
    *,
    fill: Mapping[str, Callable[[str], str]] | None = None,
    keyed: Mapping[str, KeyedBuild] | None = None,
    calibrate: Mapping[str, CalibrationHook] | None = None,
    disagreement: Mapping[str, DisagreementHook] | None = None,
    **parts: tuple[TaskBuilder, Applier, type[ApplyResult]],
) -> None:
    """Register the kinds of one module: ``NAME=(build_tasks, apply, result_type)`` each.

    A kind's spec is ``specs[NAME]``, its label config ``configs/NAME.xml``, its config
    filler ``fill[NAME]``, its keys-first path ``keyed[NAME]`` and its judge-vs-human
    pairing ``calibrate[NAME]`` and its judges' disagreement ``disagreement[NAME]`` when
    given.
    """
    for name, (build, apply, result) in parts.items():
        filler = (fill or {}).get(name)
        register_kind(
            StudyKind(
                specs[name],
                configs / f"{name}.xml",
                build,
                apply,
                result,
                filler,
                (keyed or {}).get(name),
                (calibrate or {}).get(name),
                disagreement=(disagreement or {}).get(name),
            )
        )


def load_kinds() -> None:
    """Import every instrument's kind module not imported yet (they register themselves),
    in the instruments' listing order (the order their kinds are listed in)."""
    for module in part_modules("human_module"):
        if module not in _loaded:
            _loaded.add(module)
            importlib.import_module(module)


def study_kinds() -> dict[str, StudyKind]:
    """Every registered kind by name, in registration order."""
    load_kinds()
    return dict(_KINDS)


def study_specs() -> dict[str, StudySpec]:
    """Every registered kind's spec by name."""
    return {name: kind.spec for name, kind in study_kinds().items()}


def get_kind(name: str) -> StudyKind:
    """The study kind called ``name``.

    Raises:
        InputError: no such study.
    """
    kinds = study_kinds()
    try:
        return kinds[name]
    except KeyError:
        raise InputError(f"Unknown study {name!r}; choose one of {', '.join(kinds)}.") from None


def get_spec(name: str) -> StudySpec:
    """The spec of the study called ``name`` (raises ``InputError`` when unknown)."""
    return get_kind(name).spec


def rating_studies() -> tuple[str, ...]:
    """The studies whose items are rated on a scale (``annotate status --min-ratings``)."""
    return tuple(name for name, spec in study_specs().items() if spec.rating_question)


def label_config(name: str) -> str:
    """The Label Studio labeling config (XML) of a study, with dynamic parts filled in."""
    kind = get_kind(name)
    text = kind.config.read_text("utf-8")
    return kind.fill_config(text) if kind.fill_config is not None else text


def instructions_html(name: str) -> str:
    """Short HTML instructions shown by Label Studio before labeling starts."""
    spec = get_spec(name)
    items = "".join(f"<li>{q.prompt}</li>" for q in spec.questions)
    return (
        f"<p><b>{spec.title}.</b> {spec.summary}</p><ul>{items}</ul>"
        f"<p>{spec.panel_note} "
        "Answers given in under 10 seconds are not counted.</p>"
    )
