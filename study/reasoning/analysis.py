"""Drift analysis of one generation run: drift table → statistics → report (SPEC §6–§8).

:func:`analyze_run` reads a run's labeled trajectories, compares every response with its
question's baseline (:func:`study.reasoning.drift.build_drift_table`, the compiled batch
kernel), runs the statistics engine per model and metric, writes the report folder and
stores an :class:`~storage.models.Analysis` row.

The drift table is written first as ``drift.csv`` and the statistics are computed from
that very file exactly as ``driftlens stats`` does (see :mod:`study.reasoning.drift_files`),
so ``stats.json`` equals ``driftlens stats DIR/drift.csv --bootstrap B --seed S`` and every
report table and figure is derived from it.

Output folder::

    drift.csv, drift.parquet       the statistics input (one row per compared pair)
    pairs.csv, pairs.parquet       the full pair table with Levenshtein and JSD components
    stats.json                     the driftlens stats JSON
    provenance.json                what produced the numbers
    tables/, figures/, report.md, report.html
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, col, select

from driftlens_core.bootstrap import MIN_BOOTSTRAP
from ontology.labelers.registry import ensure_labeler_spec
from ontology.versions import document, get_version, version_label
from storage.errors import InputError
from storage.models import Analysis, ModelSpecRow, Question
from storage.paths import stored_path
from storage.repo.analyses import record_analysis
from storage.repo.runs import require_run
from study.assessable import Usable
from study.reasoning.calibrated import (
    CalibratedDrift,
    calibrated_drift,
    calibrated_frame,
    calibrated_notes,
)
from study.reasoning.calibrated_judges import judge_rates_block, judge_rates_frame
from study.reasoning.config import DEFAULT_BOOTSTRAP, DEFAULT_SEED, AnalysisConfig
from study.reasoning.drift_files import compute_stats, pair_frame, stats_frame, stats_json_text
from study.reasoning.examples import choose_examples, example_pairs
from study.reasoning.provenance import analysis_provenance, labeler_settings
from study.reasoning.report import (
    Provenance,
    ReportData,
    ReportTables,
    build_tables,
    question_table,
    write_report,
)
from study.reasoning.report.tables import withhold_conclusions
from study.reasoning.trajectories import Progress, drift_table_by_run, label_run, run_labels
from study.report.folder import folder_slug, fresh_report_folder, staged_report_folder
from study.safe_csv import write_frame_csv

if TYPE_CHECKING:
    from study.reasoning.sharded.analysis import StatsExecutor


@dataclass(frozen=True)
class AnalysisResult:
    """What :func:`analyze_run` produced.

    Attributes:
        analysis_id: id of the stored ``Analysis`` row.
        out_dir: the report folder.
        files: output name → path (``report_html``, ``report_md``, ``drift_csv``, …).
        config: the analysis parameters.
        stats: the statistics JSON (``driftlens stats`` schema).
        tables: the report tables.
        provenance: where the numbers came from.
        simulated: whether the run is simulated.
    """

    analysis_id: int
    out_dir: Path
    files: dict[str, Path]
    config: AnalysisConfig
    stats: dict[str, Any]
    tables: ReportTables
    provenance: Provenance
    simulated: bool


def _run_names(run_name: str | Sequence[str]) -> list[str]:
    names = [run_name] if isinstance(run_name, str) else list(run_name)
    # "a,b" is accepted too, so one CLI/page string can name several runs.
    out = [n.strip() for name in names for n in name.split(",") if n.strip()]
    if not out:
        raise InputError("Name at least one generation run.")
    return list(dict.fromkeys(out))


def _stored_folders(*, session: Session) -> dict[str, int]:
    return {
        folder: analysis_id
        for analysis_id, folder in session.exec(
            select(Analysis.id, Analysis.out_dir).where(col(Analysis.out_dir).is_not(None))
        )
        if folder is not None and analysis_id is not None
    }


def report_folder_owner(folder: Path, *, session: Session) -> int | None:
    """The stored analysis whose report lives in ``folder``, if any."""
    return _stored_folders(session=session).get(stored_path(folder, session=session))


def _report_folder(
    out_dir: Path | None, names: Sequence[str], labeler: str, *, session: Session
) -> Path:
    """The analysis's own report folder: the one asked for, or a new one in the workspace.

    Raises:
        InputError: ``out_dir`` holds the report of a stored analysis (it would be lost).
    """
    stored = _stored_folders(session=session)
    if out_dir is not None:
        owner = stored.get(stored_path(out_dir, session=session))
        if owner is not None:
            raise InputError(
                f"{out_dir} holds the report of stored analysis {owner}; choose another "
                "folder or leave out --out (each analysis gets a new folder)."
            )
        return Path(out_dir)
    workspace = session.info.get("workspace")
    parent = (Path(workspace) if workspace is not None else Path.cwd()) / "reports"
    stem = folder_slug(f"{'+'.join(names)}-{labeler}")
    return fresh_report_folder(
        parent, stem, taken=lambda p: stored_path(p, session=session) in stored
    )


def analyze_run(
    run_name: str | Sequence[str],
    labeler_spec: str,
    *,
    session: Session,
    out_dir: Path | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    ontology_version: str | int | None = None,
    examples_per_class: int = 2,
    label_first: bool = False,
    progress: Progress | None = None,
    chunk_questions: int | None = None,
    executor: StatsExecutor | None = None,
    allow_self_judging: bool = False,
) -> AnalysisResult:
    """Analyse drift of one run (or several: one model each) and write the report folder.

    Args:
        run_name: the generation run, or several (a sequence or ``"a,b"``); each run's
            model is analysed separately and shown side by side.
        labeler_spec: labeler whose step labels define the trajectories (e.g. ``keywords``).
        session: open session (the caller commits).
        out_dir: report folder (created; existing report files are replaced); default a
            new folder ``reports/<runs>-<labeler>[-N]`` in the workspace. A folder that
            holds another stored analysis's report is refused: each analysis keeps its own.
        bootstrap: cluster-bootstrap replicates B.
        seed: bootstrap seed.
        ontology_version: id, ``name`` or ``name@N`` (default: latest ``driftlens``).
        examples_per_class: example pairs shown per condition class.
        label_first: label unlabeled responses with ``labeler_spec`` before analysing.
        progress: ``(done, total)`` callback for the labeling pass.
        chunk_questions: build the drift table and statistics out of core, this many
            questions at a time (:mod:`study.reasoning.out_of_core`; same files).
        executor: with ``chunk_questions``, compute each model's statistics in a task of
            this executor (:mod:`study.reasoning.sharded.analysis`; the same ``stats.json``).
        allow_self_judging: with ``label_first``, let an LLM labeler be a run's own model
            (refused otherwise, before any request).

    Returns:
        The stored analysis (one ``Analysis`` row per run) and everything written.

    Raises:
        NotFoundError: no such run or ontology version.
        InputError: nothing to compare (no labeled responses, no baselines) or the
            table cannot be analysed (e.g. no noise conditions).
    """
    if bootstrap < MIN_BOOTSTRAP:
        raise InputError(
            f"--bootstrap must be at least {MIN_BOOTSTRAP} "
            "(use 2,000 or more for reported numbers)."
        )
    if executor is not None and chunk_questions is None:
        raise InputError("--executor needs --chunk-questions (the statistics run per model).")
    names = _run_names(run_name)
    runs = [require_run(name, session=session) for name in names]
    version = get_version(ontology_version, session=session)
    if label_first:
        for name in names:
            label_run(
                name,
                labeler_spec,
                session=session,
                ontology_version=version.id,
                progress=progress,
                allow_self_judging=allow_self_judging,
            )
    labeler = ensure_labeler_spec(labeler_spec, session=session)
    assert version.id is not None and labeler.id is not None
    settings = labeler_settings(runs, labeler, version_id=version.id, session=session)
    config = AnalysisConfig(
        run=names[0],
        runs=tuple(names),
        labeler=labeler_spec,
        ontology_version=f"{version.name}@{version.version}",
        bootstrap=bootstrap,
        seed=seed,
        examples_per_class=examples_per_class,
    )
    run_of = run_labels(names, session=session)
    out_dir = _report_folder(out_dir, names, labeler_spec, session=session)
    files: dict[str, Path] = {}
    # Everything is written into a fresh sibling that replaces the folder only when complete.
    with staged_report_folder(out_dir) as work:
        if chunk_questions is None:
            built = _drift_in_memory(
                run_of, labeler_spec, session=session, version=version, config=config, work=work
            )
        else:
            built = _drift_out_of_core(
                run_of,
                labeler_spec,
                session=session,
                version=version,
                config=config,
                work=work,
                chunk=chunk_questions,
                executor=executor,
            )
        if built.n_pairs == 0:
            reasons = (
                ", ".join(f"{k}: {v}" for k, v in sorted(built.skipped.items())) or "no responses"
            )
            raise InputError(
                f"Run {', '.join(names)!r} has no comparable responses under labeler "
                f"{labeler_spec!r} ({reasons}) under {version_label(version)}; label it "
                "first: "
                + shlex.join(
                    [
                        "driftlens",
                        "label",
                        "--run",
                        names[0],
                        "--labeler",
                        labeler_spec,
                        "--ontology-version",
                        version_label(version),
                    ]
                )
            )
        files.update(built.files)
        stats = built.stats()
        calibrated = _calibrated(built, run_of, version, config, session=session)
        if calibrated is not None:
            # the model-only statistics stay as `driftlens stats` writes them; the human
            # slice's calibrated headlines sit beside them (study/reasoning/calibrated.py)
            stats["calibrated"] = calibrated.to_dict()
        judge_rates = judge_rates_block(names, session=session, bootstrap=bootstrap, seed=seed)
        if judge_rates is not None:
            # the response judge's rates beside their calibrated estimates, where a
            # helpfulness / distraction / acknowledgement study was pulled
            stats["calibrated_judges"] = judge_rates
        files["stats_json"] = work / "stats.json"
        files["stats_json"].write_text(stats_json_text(stats), encoding="utf-8")

        provenance = analysis_provenance(
            runs=[(run, session.get(ModelSpecRow, run.model_spec_id)) for run in runs],
            version=version,
            labeler=labeler,
            config=config,
            n_pairs=built.n_pairs,
            skipped=built.skipped,
            labeler_settings=settings,
        )
        files["provenance_json"] = work / "provenance.json"
        files["provenance_json"].write_text(
            provenance.model_dump_json(indent=2) + "\n", encoding="utf-8"
        )
        usable = Usable(
            built.n_pairs,
            built.n_pairs + sum(built.skipped.values()),
            "responses compared (parsed, labeled, with a baseline)",
        )
        tables = build_tables(stats)
        if not usable.assessable:
            tables = withhold_conclusions(tables)
        chosen = built.examples
        examples = example_pairs(
            chosen, run_of=run_of, labeler_id=labeler.id, version=version, session=session
        )
        doc = document(version)
        data = ReportData(
            title=f"DriftLens drift report — {', '.join(names)}",
            stats=stats,
            tables=tables,
            provenance=provenance,
            examples=examples,
            roots=tuple(r.name for r in doc.roots),
            questions=built.questions,
            not_assessable=None if usable.assessable else usable.sentence,
            robustness=_robustness(names, session=session),
            calibrated=None if calibrated is None else calibrated_frame(calibrated),
            calibrated_notes=() if calibrated is None else calibrated_notes(calibrated),
            judge_rates=None if judge_rates is None else judge_rates_frame(judge_rates),
            judge_rates_notes=() if judge_rates is None else tuple(judge_rates["notes"]),
        )
        written = write_report(data, work)
        files["report_html"] = written.html
        files["report_md"] = written.markdown
        for name, paths in written.figures.items():
            for p in paths:
                files[f"figure_{name}_{p.suffix[1:]}"] = p
        for name, paths in written.tables.items():
            for p in paths:
                files[f"table_{name}_{p.suffix[1:]}"] = p

    files = {k: out_dir / p.relative_to(work) for k, p in files.items()}

    result = {
        "stats": stats,
        "tiers": json.loads(tables.tiers.to_json(orient="records")),
        "usable": usable.to_dict(),
        "provenance": provenance.model_dump(mode="json"),
        "files": {k: stored_path(v, session=session) for k, v in files.items()},
        # The chosen example pairs, so the Analysis page reads them back in a few queries.
        "examples": chosen,
    }
    # One row per run, so each run's latest analysis is found from the run.
    rows = [
        record_analysis(
            run_id=run.id or 0,
            labeler_id=labeler.id,
            ontology_version_id=version.id,
            config=config.model_dump(mode="json"),
            result=result,
            implementation=provenance.implementation,
            out_dir=stored_path(out_dir, session=session),
            session=session,
        )
        for run in runs
    ]
    assert rows[0].id is not None
    return AnalysisResult(
        analysis_id=rows[0].id,
        out_dir=out_dir,
        files=files,
        config=config,
        stats=stats,
        tables=tables,
        provenance=provenance,
        simulated=provenance.simulated,
    )


@dataclass(frozen=True)
class _Built:
    """The drift files written, and what the report needs from the drift table."""

    files: dict[str, Path]
    n_pairs: int
    skipped: dict[str, int]
    questions: Any
    examples: list[dict[str, Any]]
    stats: Callable[[], dict[str, Any]]


def _drift_in_memory(
    run_of: dict[str, Any],
    labeler_spec: str,
    *,
    session: Session,
    version: Any,
    config: AnalysisConfig,
    work: Path,
) -> _Built:
    """The drift table in memory, one run (model) at a time (the reference path)."""
    table = drift_table_by_run(
        run_of, labeler_spec, session=session, version=version, alpha=config.sri_alpha
    )
    files: dict[str, Path] = {}
    if table.rows.empty:
        return _Built(files, 0, table.skipped, None, [], dict)
    drift = stats_frame(table.rows)
    files["drift_csv"] = work / "drift.csv"
    write_frame_csv(drift, files["drift_csv"])
    files["drift_parquet"] = work / "drift.parquet"
    drift.to_parquet(files["drift_parquet"], index=False)
    pairs = pair_frame(table.rows)
    files["pairs_csv"] = work / "pairs.csv"
    write_frame_csv(pairs, files["pairs_csv"])
    files["pairs_parquet"] = work / "pairs.parquet"
    pairs.to_parquet(files["pairs_parquet"], index=False)
    ids = sorted({str(q) for q in drift["question_id"]})
    texts = {
        str(k): t
        for k, t in session.exec(
            select(Question.external_id, Question.text).where(col(Question.external_id).in_(ids))
        ).all()
    }

    def stats() -> dict[str, Any]:
        # Read the file back, as `driftlens stats` would, so the numbers are the same.
        return compute_stats(files["drift_csv"], bootstrap=config.bootstrap, seed=config.seed)

    return _Built(
        files=files,
        n_pairs=table.n_pairs,
        skipped=table.skipped,
        questions=question_table(drift, texts),
        examples=choose_examples(table.rows, per_class=config.examples_per_class),
        stats=stats,
    )


def _drift_out_of_core(
    run_of: dict[str, Any],
    labeler_spec: str,
    *,
    session: Session,
    version: Any,
    config: AnalysisConfig,
    work: Path,
    chunk: int,
    executor: StatsExecutor | None = None,
) -> _Built:
    """The drift files slice by slice of questions (:mod:`study.reasoning.out_of_core`)."""
    from study.reasoning.out_of_core import build_drift_files, stats_by_model, write_parquet

    built = build_drift_files(
        run_of,
        labeler_spec,
        session=session,
        version=version,
        alpha=config.sri_alpha,
        work=work,
        chunk=chunk,
        examples_per_class=config.examples_per_class,
    )
    files: dict[str, Path] = {}
    if built.n_pairs:
        files["drift_csv"] = built.drift_csv
        files["drift_parquet"] = work / "drift.parquet"
        write_parquet([p for _m, p in built.parts], files["drift_parquet"])
        files["pairs_csv"] = built.pairs_csv
        files["pairs_parquet"] = work / "pairs.parquet"
        write_parquet(built.pair_parts, files["pairs_parquet"])

    def stats() -> dict[str, Any]:
        try:
            if executor is not None:
                from study.reasoning.sharded.analysis import stats_on_executor

                return stats_on_executor(
                    built.parts,
                    run_of,
                    labeler_spec,
                    session=session,
                    settings=executor.settings,
                    executor=executor.executor,
                    version_id=int(version.id),
                    alpha=config.sri_alpha,
                    bootstrap=config.bootstrap,
                    seed=config.seed,
                    chunk=chunk,
                )
            return stats_by_model(
                built.parts, bootstrap=config.bootstrap, seed=config.seed, chunk=chunk
            )
        finally:
            shutil.rmtree(work / ".parts", ignore_errors=True)

    return _Built(
        files=files,
        n_pairs=built.n_pairs,
        skipped=built.skipped,
        questions=built.questions,
        examples=built.examples,
        stats=stats,
    )


def _calibrated(
    built: _Built, run_of: dict[str, Any], version: Any, config: AnalysisConfig, *,
    session: Session,
) -> CalibratedDrift | None:  # fmt: skip
    """Drift calibrated to a pulled ``label_check`` slice (``None`` without one)."""
    path = built.files.get("drift_parquet")
    if path is None:
        return None
    import pandas as pd

    return calibrated_drift(
        pd.read_parquet(path),
        {run.name: model for model, run in run_of.items()},
        f"{version.name}@{version.version}",
        document(version).symbol_of,
        session=session,
        alpha=config.sri_alpha,
    )


def _robustness(names: Sequence[str], *, session: Session) -> tuple[str, ...]:
    """The "Judge robustness" lines: each run's kept relabeling result, or "not assessed"."""
    from study.judge_robustness.report import robustness_lines
    from study.judge_robustness.result import stored_robustness

    kept = [stored_robustness("reasoning", name, session=session) for name in names]
    return tuple(robustness_lines([r for r in kept if r is not None]))
