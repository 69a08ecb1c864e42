"""What an instrument hands the behavioural checks and the job runner (typed, no imports).

:class:`StudyKit` is the instrument's smallest simulated study as the instrument checks
(:mod:`app.instrument_checks`) drive it: run it into the workspace (resumably, in one
process or sharded on an executor), name two simulated models whose runs differ, write its
report and downloads. :class:`RunOutcome` is what one call of its ``run`` stored.

The callables take the shared rooms' objects (a SQLModel session, the workspace
settings, a :class:`study.cluster.executors.Executor`); they are typed ``Any`` here so
this package stays importable by every room.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RunOutcome:
    """What one call of a kit's ``run`` left in the workspace.

    Attributes:
        run: the run's name.
        stored: units the run holds now.
        added: units this call stored (0 when a finished run is run again).
        total: units the run's plan has.
    """

    run: str
    stored: int
    added: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        """What a job row keeps of it (plain JSON)."""
        return {"run": self.run, "stored": self.stored, "added": self.added, "total": self.total}


@dataclass(frozen=True)
class KitJudge:
    """One judge of a kit's runs, as the judge-robustness check re-judges it.

    Attributes:
        judges: the first judges every run of the kit's ``run`` (its verdicts are
            stored), the others are the alternatives the check re-judges a run with;
            at least two.
        options: the ``options`` the plugin's ``robustness`` adapter reads for this judge.
        judged: ``judged(run) -> name``: what the adapter re-judges for a run; default:
            the run itself.
        what: how the check's messages name this judge (e.g. "response judge").
    """

    judges: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    judged: Callable[[str], str] | None = None
    what: str = "judge"


@dataclass(frozen=True)
class StudyKit:
    """An instrument's smallest simulated study, as the instrument checks drive it.

    Attributes:
        models: two simulated model specs whose runs differ by a known amount (the checks
            compare them).
        hostile_model: a simulated spec whose answers are hostile text (terminal escapes,
            HTML, formulas); ``None``: the instrument stores no answer text.
        run: ``run(name, *, model, session, settings, limit=None, executor=None,
            per_shard=None) -> RunOutcome``: runs (or resumes) the study ``name``;
            ``limit`` stops it early, after about that many new units (at least one, fewer
            than all, at a boundary the instrument chooses: a sample, an item), as an
            interruption would; ``executor`` runs it sharded, ``per_shard`` units to a
            shard.
        report: ``report(runs, out, *, session) -> Path``: writes the report and the
            downloads of the named runs under the folder ``out`` and returns the report's
            main file (HTML or Markdown); every CSV beside it is a download.
        job: the kind, in the plugin's ``jobs`` part, that runs ``run`` as a background
            job from the JSON arguments ``{"run": name, "model": spec}``.
        human_kinds: study kinds whose tasks a ``Selection(run=name)`` takes from a run
            (the simulated annotator pool answers them in the round-trip check).
        judges: simulated judges: the first judges every run of ``run``, the others are
            the alternatives the judge-robustness check re-judges a run with (with the
            plugin's ``robustness`` adapter); ``()``: the instrument has no judge.
        compare_options: the instrument's own fields of a
            :class:`study.compare.types.CompareOptions` its runs are compared (and loaded)
            under (reasoning drift: the ``labeler``).
        judge_options: the ``options`` its robustness adapter reads (reasoning drift: the
            ``labeler`` under test).
        judged: ``judged(run) -> name``: what the robustness adapter re-judges for a run
            (disposition drift: the arm's study); default: the run itself.
        human_selection: ``human_selection(run) -> fields`` of an
            :class:`annotation.selection.Selection` that takes a run's tasks (default
            ``{"run": run}``; a limit keeps the round trip small).
        terminal: ``terminal(runs, out) -> argv``: the ``driftlens`` command that prints
            the named runs' model text (answers, verdict reasons) on the terminal (files
            it writes go under the folder ``out``); the hostile-text check reads what it
            prints. ``None``: no command prints a run of the instrument.
        hostile_text: the visible words of the hostile model's payload (a run of
            ``hostile_model`` stores them): the terminal check requires them in what
            ``terminal`` prints, proving the model text was printed (escaped), not left
            out. Empty: the check only looks for raw control characters.
        more_judges: the instrument's other judges (a second judge beside ``judges``,
            e.g. reasoning drift's response judge beside its step labeler), each
            re-judged by the judge-robustness check like ``judges``.
    """

    models: tuple[str, str]
    run: Callable[..., RunOutcome]
    report: Callable[..., Path]
    job: str
    hostile_model: str | None = None
    human_kinds: tuple[str, ...] = ()
    judges: tuple[str, ...] = ()
    compare_options: Mapping[str, Any] = field(default_factory=dict)
    judge_options: Mapping[str, Any] = field(default_factory=dict)
    judged: Callable[[str], str] | None = None
    human_selection: Callable[[str], Mapping[str, Any]] | None = None
    terminal: Callable[[Sequence[str], Path], Sequence[str]] | None = None
    hostile_text: tuple[str, ...] = ()
    more_judges: tuple[KitJudge, ...] = ()

    def judge_setups(self) -> tuple[KitJudge, ...]:
        """Every judge the robustness check re-judges: ``judges`` first, then ``more_judges``."""
        first = (KitJudge(self.judges, self.judge_options, self.judged),) if self.judges else ()
        return first + self.more_judges

    def selection(self, run: str) -> Mapping[str, Any]:
        """The :class:`~annotation.selection.Selection` fields that take ``run``'s tasks."""
        return {"run": run} if self.human_selection is None else self.human_selection(run)


#: A job part: ``fn(args, *, session, settings) -> result`` with ``args`` the job's JSON
#: arguments and ``result`` what the job row keeps (plain JSON).
JobFn = Callable[..., dict[str, Any]]


def kit_run_job(kit: Callable[[], StudyKit], instrument: str) -> JobFn:
    """The ``run`` job of an instrument whose job is its kit's study: ``{"run", "model"}``.

    Args:
        kit: the instrument's ``study_kit`` part (called when the job runs).
        instrument: how the instrument is named in the refusal of bad arguments.
    """

    def run_job(args: Mapping[str, Any], *, session: Any, settings: Any) -> dict[str, Any]:
        """Run (or resume) the kit's study ``args["run"]`` of ``args["model"]``.

        Raises:
            InputError: ``run`` or ``model`` is missing.
        """
        from storage.errors import InputError

        missing = [k for k in ("run", "model") if not isinstance(args.get(k), str)]
        if missing:
            raise InputError(f"A {instrument} run job needs {' and '.join(missing)} (text).")
        out = kit().run(str(args["run"]), model=str(args["model"]), session=session,
                        settings=settings)  # fmt: skip
        return out.to_dict()

    return run_job
