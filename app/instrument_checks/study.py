"""The behavioural checks: an instrument's smallest simulated study, driven end to end.

A plugin with a ``study_kit`` (:class:`~driftlens_plugins.kit.StudyKit`) must:

* **store and resume** — an interrupted run (``limit``: it stops early, at a boundary of
  the instrument's choosing) keeps what it stored, the next call adds exactly the rest, a
  third adds nothing;
* **compare** — two runs of the kit's two models go through the shared compare service
  (:func:`study.compare.compare_runs`), the known difference shows as a ``different``
  row, and storing a run changes the data revision (no stale Compare page);
* **run as a background job** — the kit's job, submitted through the jobs service
  (:func:`study.jobs.submit_study_job`: ``python -m study.jobs.run``, no command line),
  ends ``done`` with the run stored;
* **run sharded on the cluster executor** — the study on the local executor, in shards,
  stores exactly what one process stores;
* **judge robustness**, where it has a judge — its adapter re-judges a run through the
  shared service (:func:`study.judge_robustness.service.judge_robustness`);
* **make the human-study round trip offline** — each of its kinds is pushed from a run to
  the in-process Label Studio, answered by the simulated annotator pool, pulled and applied;
* **write its report and downloads** — the main file names the runs (or their models),
  every CSV download reads back with rows;
* **keep hostile text inert** — a run of the kit's hostile model leaves no raw control
  character, no live tag and no unguarded formula in the report or its downloads, and
  its answers printed by the ``driftlens`` CLI (the kit's ``terminal`` command, through
  typer's runner) show the payload's visible words (``hostile_text``: the model text was
  printed) with no raw control character or terminal escape.

Each check works on run names of its own (``check-…``), so they share one workspace.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from sqlmodel import Session

from driftlens_plugins import InstrumentPlugin, StudyKit, load_ref
from storage.settings import Settings

#: How long the background-job check waits for its job (a cold process imports the stack).
JOB_WAIT_S = 180.0
# every control character a terminal or a reader could act on (the newline of a text file
# and the tab of a table excepted)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_FORMULA_START = ("=", "+", "-", "@")


def _kit(plugin: InstrumentPlugin) -> StudyKit:
    assert plugin.study_kit is not None
    kit = load_ref(plugin.study_kit)()
    assert isinstance(kit, StudyKit), f"{plugin.name}: study_kit must return a StudyKit"
    return kit


def check_store_and_resume(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """An interrupted run keeps its units; resuming adds exactly the rest, then nothing."""
    kit = _kit(plugin)
    model = kit.models[0]
    first = kit.run("check-resume", model=model, session=session, settings=settings, limit=2)
    assert 0 < first.added == first.stored < first.total, (
        f"{plugin.name}: a run stopped early (limit 2) stored {first.stored} of {first.total}"
    )
    rest = kit.run("check-resume", model=model, session=session, settings=settings)
    assert rest.stored == rest.total and rest.added == rest.total - first.stored, (
        f"{plugin.name}: resuming stored {rest.added} more, {rest.stored} of {rest.total}"
    )
    again = kit.run("check-resume", model=model, session=session, settings=settings)
    assert again.added == 0 and again.stored == rest.stored, (
        f"{plugin.name}: running a finished run again stored {again.added} more"
    )


def check_compare_runs(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Two runs of the kit's models compare through the shared service and differ."""
    from study.compare import CompareOptions, compare_runs, data_revision, run_choices

    kit = _kit(plugin)
    before = data_revision(session=session)
    names = []
    for i, model in enumerate(kit.models):
        out = kit.run(f"check-cmp-{i}", model=model, session=session, settings=settings)
        assert out.stored > 0, f"{plugin.name}: a run of {model} stored nothing"
        names.append(out.run)
    assert data_revision(session=session) != before, (
        f"{plugin.name}: storing runs left the data revision as it was (its revision_tables)"
    )
    offered = run_choices(plugin.name, session=session)
    assert set(names) <= set(offered), f"{plugin.name}: the Compare page offers {offered}"
    options = CompareOptions(n_boot=300, seed=0, **kit.compare_options)
    result = compare_runs(names, instrument=plugin.name, session=session, options=options)
    assert result.rows, f"{plugin.name}: comparing {names} gave no row"
    verdicts = {r.verdict for r in result.rows}
    assert "different" in verdicts, (
        f"{plugin.name}: the kit's models {kit.models} were not told apart ({verdicts})"
    )


def check_background_job(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """The kit's job runs through the jobs service's study-level entry point and stores."""
    from study.compare import run_choices
    from study.jobs import get_job, submit_study_job

    kit = _kit(plugin)
    job = submit_study_job(
        session=session, workspace=settings.workspace, db_url=settings.db_url,
        runner=plugin.name, job=kit.job, args={"run": "check-job", "model": kit.models[0]},
        title=f"{plugin.name}: check job",
    )  # fmt: skip
    assert job.argv[:3] == ("@job", plugin.name, kit.job), job.argv
    deadline = time.monotonic() + JOB_WAIT_S
    while (job := get_job(job.id, session=session)).running and time.monotonic() < deadline:
        time.sleep(0.5)
    log = _log_tail(job.log_path, settings)
    assert job.state == "done", f"{plugin.name}: the job ended {job.state}: {job.error}\n{log}"
    session.expire_all()
    # the run as the instrument names it (a disposition arm is STUDY:ARM)
    stored = str((job.result or {}).get("run", "check-job"))
    assert stored in run_choices(plugin.name, session=session), (
        f"{plugin.name}: the job ended done but its run {stored!r} is not stored"
    )


def _log_tail(log_path: str | None, settings: Settings) -> str:
    if not log_path:
        return ""
    path = Path(log_path)
    path = path if path.is_absolute() else settings.workspace / path
    return path.read_text(encoding="utf-8", errors="replace")[-2000:] if path.is_file() else ""


def check_sharded(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """On the cluster's local executor, in shards, the run stores what one process stores."""
    from study.cluster.executors import LocalExecutor
    from study.compare import CompareOptions, get_adapter

    kit = _kit(plugin)
    model = kit.models[0]
    one = kit.run("check-one", model=model, session=session, settings=settings)
    sharded = kit.run("check-shards", model=model, session=session, settings=settings,
                      executor=LocalExecutor(), per_shard=1)  # fmt: skip
    assert sharded.stored == sharded.total == one.total, (
        f"{plugin.name}: sharded run stored {sharded.stored} of {sharded.total}"
    )
    adapter = get_adapter(plugin.name)

    options = CompareOptions(**kit.compare_options)

    def table(run: str) -> pd.DataFrame:
        measures = adapter.load(run, session=session, options=options).measures
        return measures.sort_values(list(measures.columns)).reset_index(drop=True)

    pd.testing.assert_frame_equal(table(one.run), table(sharded.run))


def check_human_round_trip(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Each of the kit's study kinds: pushed from a run, answered offline, pulled, applied."""
    from annotation.apply import apply_study
    from annotation.kinds import ApplyResult
    from annotation.selection import Selection
    from annotation.simulated import AnnotatorPool, OfflineLabelStudio
    from annotation.sync import ensure_project, pull, push, tasks_to_push

    kit = _kit(plugin)
    run = kit.run("check-human", model=kit.models[0], session=session, settings=settings)
    selection = Selection(**kit.selection(run.run))
    client = OfflineLabelStudio()
    for kind in kit.human_kinds:
        project = ensure_project(kind, client=client, session=session)
        session.commit()
        tasks = tasks_to_push(kind, selection, session=session)
        assert tasks, f"{plugin.name}: {kind} selects no task from a stored run"
        push(kind, tasks, client=client, session=session)
        session.commit()
        made = AnnotatorPool(seed=0).annotate(client, kind, project.project_id)
        assert made >= len(tasks), f"{plugin.name}: the pool answered {made} of {kind}"
        pull(kind, client=client, session=session)
        session.commit()
        applied = apply_study(kind, session=session)
        assert isinstance(applied, ApplyResult), f"{plugin.name}: {kind} applied nothing"
        assert len(applied.aggregate.items) == len(tasks), (
            f"{plugin.name}: {kind} aggregated {len(applied.aggregate.items)} of {len(tasks)}"
        )


def check_judge_robustness(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Where the instrument has a judge: its robustness adapter re-judges a stored run with
    the primary judge resampled and an alternative judge, through the shared service; every
    judge the kit names (:meth:`StudyKit.judge_setups`) is re-judged, so a judge whose
    verdicts a run does not store fails here."""
    from storage.errors import DriftLensError
    from study.judge_robustness.service import judge_robustness

    kit = _kit(plugin)
    setups = kit.judge_setups()
    if plugin.robustness is None or not setups:
        return
    run = kit.run("check-judge", model=kit.models[0], session=session, settings=settings)
    for setup in setups:
        target = run.run if setup.judged is None else setup.judged(run.run)
        try:
            result = judge_robustness(
                plugin.name, target, session=session, resamples=3, judges=setup.judges[1:],
                primary=setup.judges[0], sample=12, bootstrap=200, seed=0,
                options=setup.options,
            )  # fmt: skip
        except DriftLensError as exc:  # a refusal (e.g. no stored verdict) is a failed check
            raise AssertionError(
                f"{plugin.name}: judge robustness of its {setup.what} {setup.judges[0]} "
                f"refused {target}: {exc}"
            ) from exc
        assert result.run == target and result.n_items > 0, (
            f"{plugin.name}: judge robustness re-judged {result.n_items} items of {target}"
        )
        assert result.primary == setup.judges[0] and set(result.alternatives) == set(
            setup.judges[1:]
        ), f"{plugin.name}: robustness judged with {result.primary} and {result.alternatives}"


def _report(plugin: InstrumentPlugin, kit: StudyKit, runs: list[str], session: Session,
            out: Path) -> tuple[Path, list[Path]]:  # fmt: skip
    main = kit.report(runs, out, session=session)
    assert main.is_file(), f"{plugin.name}: the report's main file {main} was not written"
    return main, sorted(out.rglob("*.csv"))


def check_report(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """The report names each run (or its model); every CSV download reads back with rows."""
    from study.safe_csv import read_csv_table

    kit = _kit(plugin)
    runs = [kit.run(f"check-rep-{i}", model=m, session=session, settings=settings).run
            for i, m in enumerate(kit.models)]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        main, csvs = _report(plugin, kit, runs, session, Path(tmp) / "report")
        text = _plain(main.read_text(encoding="utf-8"))
        for run, model in zip(runs, kit.models, strict=True):
            assert _plain(run) in text or _plain(model) in text, (
                f"{plugin.name}: the report names neither run {run} nor its model {model}"
            )
        assert csvs, f"{plugin.name}: the report has no CSV download"
        for path in csvs:
            assert len(read_csv_table(path, what=path.name)) > 0, f"{path.name} has no row"


def _plain(text: str) -> str:
    """Text without the escapes Markdown puts before ``-`` and ``/`` (compared loosely)."""
    return text.replace("\\", "").replace("&#x27;", "'")


def check_hostile_inert(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Hostile answers stay text in the report (Markdown, HTML) and its CSV downloads."""
    kit = _kit(plugin)
    if kit.hostile_model is None:
        return
    run = kit.run("check-hostile", model=kit.hostile_model, session=session, settings=settings)
    assert run.stored > 0, f"{plugin.name}: the hostile run stored nothing"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report"
        _report(plugin, kit, [run.run], session, out)
        files = [p for p in out.rglob("*") if p.suffix in (".md", ".html", ".csv", ".json")]
        assert files, f"{plugin.name}: the report wrote no text file"
        for path in files:
            text = path.read_text(encoding="utf-8")
            assert not _CONTROL.search(text.replace("\t", "").replace("\r", "")), (
                f"{plugin.name}: a raw control character reached {path.name}"
            )
            if path.suffix == ".html":
                low = text.lower()
                assert "<script" not in low and "<b>bold" not in low, (
                    f"{plugin.name}: a tag of an answer is live in {path.name}"
                )
            if path.suffix == ".csv" and text.strip():  # an empty table has no cell
                cells = pd.read_csv(path, dtype=str, keep_default_na=False).to_numpy().ravel()
                bad = [c for c in cells if c.startswith(_FORMULA_START) and _not_number(c)]
                assert not bad, f"{plugin.name}: unguarded formula {bad[0]!r} in {path.name}"


def check_hostile_terminal(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """Hostile answers reach the terminal as text: the kit's ``terminal`` command, run
    through the ``driftlens`` CLI on a hostile run, prints the payload's visible words
    (``hostile_text``) and no raw control character or escape."""
    kit = _kit(plugin)
    if kit.hostile_model is None or kit.terminal is None:
        return
    from typer.testing import CliRunner

    from app.cli.root import build_app

    run = kit.run("check-hostile-tty", model=kit.hostile_model, session=session,
                  settings=settings)  # fmt: skip
    env = {"DRIFTLENS_WORKSPACE": str(settings.workspace), "COLUMNS": "200"}
    if settings.db_url:
        env["DRIFTLENS_DB_URL"] = settings.db_url
    with tempfile.TemporaryDirectory() as tmp:
        argv = [str(a) for a in kit.terminal([run.run], Path(tmp) / "out")]
        result = CliRunner().invoke(build_app(), argv, env=env, catch_exceptions=True)
    shown = result.output
    assert result.exit_code == 0, f"{plugin.name}: `driftlens {' '.join(argv)}` failed: {shown}"
    assert shown.strip(), f"{plugin.name}: `driftlens {' '.join(argv)}` printed nothing"
    found = _CONTROL.search(shown.replace("\t", "").replace("\r", ""))
    assert found is None, (
        f"{plugin.name}: `driftlens {argv[0]}` printed a raw control character "
        f"{found.group()!r} of a hostile answer"
    )
    # the answer was printed (escaped), not left out: its visible words are there
    missing = [word for word in kit.hostile_text if word not in shown]
    assert not missing, (
        f"{plugin.name}: `driftlens {' '.join(argv)}` did not print the hostile answer's "
        f"text {missing[0]!r}: {shown[:300]!r}"
    )


def _not_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return True
    return False


#: The behavioural checks, in the order the suite runs them.
STUDY_CHECKS: tuple[tuple[str, Callable[[InstrumentPlugin, Session, Settings], None]], ...] = (
    ("store and resume", check_store_and_resume),
    ("compare two runs", check_compare_runs),
    ("background job", check_background_job),
    ("sharded on the cluster executor", check_sharded),
    ("judge robustness", check_judge_robustness),
    ("human-study round trip", check_human_round_trip),
    ("report and downloads", check_report),
    ("hostile text inert", check_hostile_inert),
    ("hostile text inert in the terminal", check_hostile_terminal),
)
