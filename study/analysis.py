"""Drift analysis of one generation run: drift table → statistics → report (SPEC §6–§8).

:func:`analyze_run` reads a run's labeled trajectories, compares every response with its
question's baseline (:func:`study.drift.build_drift_table`, the compiled batch kernel),
runs the statistics engine per model and metric, writes the report folder and stores an
:class:`~storage.models.Analysis` row.

The unit of a condition
-----------------------
Responses carry the perturbation *key* (``attribute/age/3``: the third age stimulus). The
statistics run per *category* (``attribute/age``): the stimuli of a category are variants
of one condition, not independent conditions, and the question stays the cluster of the
bootstrap, so variants of one question are never counted as independent evidence
(SPEC §8). Every stimulus row is kept (the engine averages within a question where the
design needs it); the stimulus key stays in ``pairs.csv`` (row for row the same order as
``drift.csv``, with the category in a ``category`` column). Baseline rows
(resampled baselines against baseline sample 0, class ``none``) keep the condition
``baseline``.

Matching ``driftlens stats``
----------------------------
The drift table is written first as ``drift.csv`` in the format ``driftlens stats``
reads (question_id, condition, condition_class, model, sample, the metric columns ``dtw``
and ``sri``; the ``n_*`` trajectory lengths are bookkeeping, not metrics). The
statistics are then computed from that very file through the same three calls the
``stats`` command makes (:func:`study.stats_table.read_stats_csv`,
:func:`study.stats_table.stats_input`, :func:`driftlens_core.analysis.analyze_table`),
with the same ``B`` and seed. ``stats.json`` is therefore identical to
``driftlens stats DIR/drift.csv --bootstrap B --seed S --json X.json``, and every report
table and figure is derived from it.

Output folder::

    drift.csv, drift.parquet       the statistics input (one row per compared pair)
    pairs.csv, pairs.parquet       the full pair table with Levenshtein and JSD components
    stats.json                     the driftlens stats JSON
    provenance.json                what produced the numbers
    tables/, figures/, report.md, report.html
"""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict
from sqlmodel import Session, col, select

import driftlens_core
from driftlens_core.analysis import analyze_table
from ontology.labelers.registry import ensure_labeler_spec
from ontology.schema import OntologyDoc
from ontology.versions import document, get_version
from storage.errors import InputError, NotFoundError
from storage.models import (
    BASELINE_CONDITION,
    Analysis,
    GenerationRun,
    LabelerSpec,
    ModelSpec,
    OntologyVersion,
    Perturbation,
    Question,
    Response,
)
from storage.repo.analyses import list_analyses, record_analysis
from storage.repo.labels import step_labels_for
from storage.repo.runs import require_run
from study.drift import Trajectory, build_drift_table
from study.report import (
    ExamplePair,
    Provenance,
    ReportData,
    ReportTables,
    StepView,
    build_tables,
    question_table,
    write_report,
)
from study.report.data import step_views
from study.stats_table import read_stats_csv, stats_input
from study.trajectories import Progress, label_run, load_trajectories

#: Default seed of the cluster bootstrap (ARCHITECTURE rule 7: every random procedure is seeded).
DEFAULT_SEED = 20_240_601
#: Default number of bootstrap replicates (SPEC §7).
DEFAULT_BOOTSTRAP = 10_000
#: SRI weight of the sequence term (SPEC §6).
SRI_ALPHA = 0.5
#: Metrics written to ``drift.csv`` and analysed.
METRICS: tuple[str, ...] = ("dtw", "sri")
#: Columns of ``drift.csv`` in order.
DRIFT_CSV_COLUMNS: tuple[str, ...] = (
    "model", "question_id", "condition", "condition_class", "sample",
    "n_base", "n_other", *METRICS,
)  # fmt: skip
#: Order in which example pairs are chosen (the strongest expected drift first).
EXAMPLE_CLASSES: tuple[str, ...] = ("life_event", "attribute", "noise")


class AnalysisConfig(BaseModel):
    """The parameters of one analysis (stored on the ``Analysis`` row).

    Attributes:
        version: schema version of this record.
        run: generation run name (the first, when several runs are analysed together).
        runs: every analysed run (one model each).
        labeler: labeler spec string.
        ontology_version: ``name@N`` of the ontology version the labels belong to.
        bootstrap: cluster-bootstrap replicates B.
        seed: bootstrap seed.
        sri_alpha: SRI weight of the sequence term.
        metrics: analysed metric columns.
        condition_unit: what a condition of the statistics is (``category``).
        examples_per_class: example pairs shown per condition class.
    """

    model_config = ConfigDict(frozen=True)

    version: int = 1
    run: str
    runs: tuple[str, ...] = ()
    labeler: str
    ontology_version: str
    bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int = DEFAULT_SEED
    sri_alpha: float = SRI_ALPHA
    metrics: tuple[str, ...] = METRICS
    condition_unit: str = "category"
    examples_per_class: int = 2


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


# --------------------------------------------------------------------- drift table


def condition_category(key: str) -> str:
    """The condition a perturbation key belongs to: ``class/category/n`` → ``class/category``.

    ``baseline`` and keys without a stimulus number are their own condition.
    """
    if key == BASELINE_CONDITION:
        return key
    parts = key.split("/")
    return "/".join(parts[:2]) if len(parts) >= 3 else key


def pair_frame(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pair table with a ``category`` column, in the row order of ``drift.csv``.

    ``condition`` keeps the perturbation key; rows are sorted so files are reproducible.
    """
    df = pairs.assign(category=pairs["condition"].astype(str).map(condition_category))
    df = df.sort_values(["model", "question_id", "category", "condition", "sample"], kind="stable")
    return df.reset_index(drop=True)


def stats_frame(pairs: pd.DataFrame) -> pd.DataFrame:
    """Turn the pair table of :func:`study.drift.build_drift_table` into ``drift.csv`` rows.

    ``condition`` becomes the perturbation's category (see the module docstring); only the
    columns ``driftlens stats`` reads are kept, in the row order of :func:`pair_frame`.
    """
    df = pair_frame(pairs)
    df["condition"] = df["category"]
    return df.loc[:, list(DRIFT_CSV_COLUMNS)]


def compute_stats(drift_csv: Path, *, bootstrap: int, seed: int) -> dict[str, Any]:
    """Run the statistics on a drift CSV exactly as ``driftlens stats`` does.

    Args:
        drift_csv: a drift table file.
        bootstrap: replicates B.
        seed: bootstrap seed.

    Returns:
        The ``driftlens stats`` JSON as a dict.
    """
    df = read_stats_csv(drift_csv)
    inp = stats_input(df, metrics=None)
    return analyze_table(inp, bootstrap=bootstrap, seed=seed).to_dict()


def stats_json_text(stats: dict[str, Any]) -> str:
    """Serialise the statistics the way ``driftlens stats --json`` does."""
    return json.dumps(stats, indent=2, allow_nan=False) + "\n"


# -------------------------------------------------------------------------- helpers


def software_versions() -> dict[str, str]:
    """Versions of python and the packages the numbers depend on."""
    out = {"python": platform.python_version()}
    for dist in ("numpy", "scipy", "pandas", "matplotlib", "driftlens-workbench"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _views(
    response: Response | None, labels: dict[int, dict[int, str]], doc: OntologyDoc
) -> tuple[StepView, ...]:
    if response is None:
        return ()
    return step_views(response.steps, labels.get(response.id or -1, {}), doc.root_of)


def select_examples(
    pairs: pd.DataFrame,
    *,
    run_of: dict[str, GenerationRun],
    labeler_id: int,
    version: OntologyVersion,
    per_class: int,
    session: Session,
) -> tuple[ExamplePair, ...]:
    """Pick example pairs: per class, the largest-DTW pairs of distinct categories.

    The choice is deterministic (ties broken by question, condition, sample) so the same
    analysis shows the same examples.

    Args:
        pairs: the pair table (``model`` holds the model label of :func:`load_runs`).
        run_of: model label → the run its responses belong to.
        labeler_id: the labeler whose labels to show.
        version: the ontology version of the labels.
        per_class: examples per condition class.
        session: open session.
    """
    if pairs.empty or per_class <= 0:
        return ()
    doc = document(version)
    df = pairs.assign(category=pairs["condition"].map(condition_category))
    chosen: list[dict[str, Any]] = []
    for klass in EXAMPLE_CLASSES:
        sub = df[df["condition_class"] == klass].sort_values(
            ["dtw", "question_id", "condition", "sample"],
            ascending=[False, True, True, True],
            kind="stable",
        )
        seen: set[str] = set()
        for rec in sub.to_dict(orient="records"):
            if rec["category"] in seen:
                continue
            seen.add(rec["category"])
            chosen.append(rec)
            if len(seen) >= per_class:
                break
    out: list[ExamplePair] = []
    for rec in chosen:
        run = run_of.get(str(rec["model"]))
        if run is None:
            continue
        question = session.exec(
            select(Question).where(Question.external_id == str(rec["question_id"]))
        ).first()
        if question is None:
            continue

        def response(
            condition: str, sample: int, question_id: int, run_id: int | None = run.id
        ) -> Response | None:
            return session.exec(
                select(Response)
                .where(Response.run_id == run_id)
                .where(Response.question_id == question_id)
                .where(Response.condition == condition)
                .where(Response.sample == sample)
            ).first()

        assert question.id is not None
        base = response(BASELINE_CONDITION, 0, question.id)
        other = response(str(rec["condition"]), int(rec["sample"]), question.id)
        ids = [r.id for r in (base, other) if r is not None and r.id is not None]
        labels = {
            rid: {lab.step_index: lab.symbol for lab in labs}
            for rid, labs in step_labels_for(
                ids, labeler_id=labeler_id, ontology_version_id=version.id or 0, session=session
            ).items()
        }
        memory = ""
        if other is not None and other.perturbation_id is not None:
            pert = session.get(Perturbation, other.perturbation_id)
            memory = pert.text if pert is not None else ""
        out.append(
            ExamplePair(
                model=str(rec["model"]),
                question_id=str(rec["question_id"]),
                question=question.text,
                condition=str(rec["condition"]),
                category=str(rec["category"]),
                condition_class=str(rec["condition_class"]),
                memory=memory,
                sample=int(rec["sample"]),
                dtw=float(rec["dtw"]),
                sri=float(rec["sri"]),
                baseline=_views(base, labels, doc),
                perturbed=_views(other, labels, doc),
                baseline_answer=(base.answer or "") if base else "",
                perturbed_answer=(other.answer or "") if other else "",
            )
        )
    return tuple(out)


def _run_record(run: GenerationRun, model: ModelSpec | None) -> dict[str, Any]:
    return {
        "run": run.name,
        "simulated": bool(run.simulated or (model is not None and model.simulated)),
        "model": (
            {
                "spec": model.spec,
                "provider": model.provider,
                "service": model.service,
                "model": model.model,
                "simulated": model.simulated,
                "params": model.params,
            }
            if model is not None
            else {"spec": str(run.model_spec_id)}
        ),
        "sampling": dict(run.sampling),
        "prompt_version": run.prompt_version,
        "run_config": dict(run.config),
    }


def _provenance(
    *,
    runs: list[tuple[GenerationRun, ModelSpec | None]],
    version: OntologyVersion,
    labeler: LabelerSpec,
    config: AnalysisConfig,
    n_pairs: int,
    skipped: dict[str, int],
) -> Provenance:
    records = [_run_record(run, model) for run, model in runs]
    first = records[0]
    return Provenance(
        run=", ".join(r["run"] for r in records),
        simulated=any(r["simulated"] for r in records),
        model=first["model"],
        sampling=first["sampling"],
        prompt_version=first["prompt_version"],
        run_config=first["run_config"],
        runs=records,
        ontology={
            "id": version.id,
            "name": version.name,
            "version": version.version,
            "content_hash": version.content_hash,
        },
        labeler={
            "id": labeler.id,
            "name": labeler.name,
            "kind": labeler.kind,
            "model": labeler.model,
            "temperature": labeler.temperature,
            "seed": labeler.seed,
            "prompt_version": labeler.prompt_version,
            "params": labeler.params,
        },
        analysis={
            "bootstrap": config.bootstrap,
            "seed": config.seed,
            "sri_alpha": config.sri_alpha,
            "metrics": list(config.metrics),
            "condition_unit": config.condition_unit,
            "test_alpha": 0.05,
            "pairing": "every response against its question's baseline sample 0",
        },
        implementation=driftlens_core.implementation(),
        software=software_versions(),
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        drift_pairs=n_pairs,
        skipped=dict(skipped),
    )


def _run_names(run_name: str | Sequence[str]) -> list[str]:
    names = [run_name] if isinstance(run_name, str) else list(run_name)
    # "a,b" is accepted too, so one CLI/page string can name several runs.
    out = [n.strip() for name in names for n in name.split(",") if n.strip()]
    if not out:
        raise InputError("Name at least one generation run.")
    return list(dict.fromkeys(out))


def load_runs(
    run_names: Sequence[str],
    labeler_spec: str,
    *,
    session: Session,
    version: OntologyVersion,
) -> tuple[list[Trajectory], dict[str, GenerationRun]]:
    """Trajectories of several runs, with one model label per run.

    The label is the run's model spec; when two runs share a model spec the run name is
    appended (``spec [run]``), so their drift is never pooled as one model.

    Returns:
        The trajectories and the map model label → run.
    """
    runs = [require_run(name, session=session) for name in run_names]
    specs = {run.name: session.get(ModelSpec, run.model_spec_id) for run in runs}
    counts: dict[str, int] = {}
    for run in runs:
        spec = specs[run.name]
        key = spec.spec if spec is not None else str(run.model_spec_id)
        counts[key] = counts.get(key, 0) + 1
    trajectories: list[Trajectory] = []
    run_of: dict[str, GenerationRun] = {}
    for run in runs:
        spec = specs[run.name]
        key = spec.spec if spec is not None else str(run.model_spec_id)
        label = key if counts[key] == 1 else f"{key} [{run.name}]"
        run_of[label] = run
        for t in load_trajectories(
            run.name, labeler_spec, session=session, ontology_version=version.id
        ):
            trajectories.append(t if t.model == label else replace(t, model=label))
    return trajectories, run_of


# -------------------------------------------------------------------------- service


def analyze_run(
    run_name: str | Sequence[str],
    labeler_spec: str,
    *,
    session: Session,
    out_dir: Path,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    ontology_version: str | int | None = None,
    examples_per_class: int = 2,
    label_first: bool = False,
    progress: Progress | None = None,
) -> AnalysisResult:
    """Analyse drift of one run (or several: one model each) and write the report folder.

    Args:
        run_name: the generation run, or several (a sequence or ``"a,b"``); each run's
            model is analysed separately and shown side by side.
        labeler_spec: labeler whose step labels define the trajectories (e.g. ``keywords``).
        session: open session (the caller commits).
        out_dir: report folder (created; existing report files are replaced).
        bootstrap: cluster-bootstrap replicates B.
        seed: bootstrap seed.
        ontology_version: id, ``name`` or ``name@N`` (default: latest ``driftlens``).
        examples_per_class: example pairs shown per condition class.
        label_first: label unlabeled responses with ``labeler_spec`` before analysing.
        progress: ``(done, total)`` callback for the labeling pass.

    Returns:
        The stored analysis (one ``Analysis`` row per run) and everything written.

    Raises:
        NotFoundError: no such run or ontology version.
        InputError: nothing to compare (no labeled responses, no baselines) or the
            table cannot be analysed (e.g. no noise conditions).
    """
    if bootstrap < 1:
        raise InputError("--bootstrap must be at least 1.")
    names = _run_names(run_name)
    runs = [require_run(name, session=session) for name in names]
    version = get_version(ontology_version, session=session)
    if label_first:
        for name in names:
            label_run(
                name, labeler_spec, session=session, ontology_version=version.id, progress=progress
            )
    labeler = ensure_labeler_spec(labeler_spec, session=session)
    assert version.id is not None and labeler.id is not None
    config = AnalysisConfig(
        run=names[0],
        runs=tuple(names),
        labeler=labeler_spec,
        ontology_version=f"{version.name}@{version.version}",
        bootstrap=bootstrap,
        seed=seed,
        examples_per_class=examples_per_class,
    )
    trajectories, run_of = load_runs(names, labeler_spec, session=session, version=version)
    table = build_drift_table(trajectories, alpha=config.sri_alpha)
    if table.rows.empty:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(table.skipped.items())) or "no responses"
        raise InputError(
            f"Run {', '.join(names)!r} has no comparable responses under labeler "
            f"{labeler_spec!r} ({reasons}); label it first: driftlens label --run "
            f"{names[0]} --labeler {labeler_spec}"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    drift = stats_frame(table.rows)
    files["drift_csv"] = out_dir / "drift.csv"
    drift.to_csv(files["drift_csv"], index=False)
    files["drift_parquet"] = out_dir / "drift.parquet"
    drift.to_parquet(files["drift_parquet"], index=False)
    pairs = pair_frame(table.rows)
    files["pairs_csv"] = out_dir / "pairs.csv"
    pairs.to_csv(files["pairs_csv"], index=False)
    files["pairs_parquet"] = out_dir / "pairs.parquet"
    pairs.to_parquet(files["pairs_parquet"], index=False)

    # Read the file back, as `driftlens stats` would, so the numbers are the same.
    stats = compute_stats(files["drift_csv"], bootstrap=bootstrap, seed=seed)
    files["stats_json"] = out_dir / "stats.json"
    files["stats_json"].write_text(stats_json_text(stats), encoding="utf-8")

    provenance = _provenance(
        runs=[(run, session.get(ModelSpec, run.model_spec_id)) for run in runs],
        version=version,
        labeler=labeler,
        config=config,
        n_pairs=table.n_pairs,
        skipped=table.skipped,
    )
    files["provenance_json"] = out_dir / "provenance.json"
    files["provenance_json"].write_text(
        provenance.model_dump_json(indent=2) + "\n", encoding="utf-8"
    )
    tables = build_tables(stats)
    ids = sorted({str(q) for q in drift["question_id"]})
    texts = {
        str(k): t
        for k, t in session.exec(
            select(Question.external_id, Question.text).where(col(Question.external_id).in_(ids))
        ).all()
    }
    examples = select_examples(
        table.rows,
        run_of=run_of,
        labeler_id=labeler.id,
        version=version,
        per_class=examples_per_class,
        session=session,
    )
    doc = document(version)
    data = ReportData(
        title=f"DriftLens drift report — {', '.join(names)}",
        stats=stats,
        tables=tables,
        provenance=provenance,
        examples=examples,
        roots=tuple(r.name for r in doc.roots),
        questions=question_table(drift, texts),
    )
    written = write_report(data, out_dir)
    files["report_html"] = written.html
    files["report_md"] = written.markdown
    for name, paths in written.figures.items():
        for p in paths:
            files[f"figure_{name}_{p.suffix[1:]}"] = p
    for name, paths in written.tables.items():
        for p in paths:
            files[f"table_{name}_{p.suffix[1:]}"] = p

    result = {
        "stats": stats,
        "tiers": json.loads(tables.tiers.to_json(orient="records")),
        "provenance": provenance.model_dump(mode="json"),
        "files": {k: str(v) for k, v in files.items()},
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
            out_dir=str(out_dir.resolve()),
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
class StoredAnalysis:
    """A stored analysis read back for display.

    Attributes:
        id: the ``Analysis`` row id.
        created_at: when it ran.
        config: the analysis parameters.
        stats: the statistics JSON.
        provenance: where the numbers came from.
        out_dir: the report folder (may have been moved or deleted since).
        files: output name → path, as written.
        implementation: core implementation used.
    """

    id: int
    created_at: datetime
    config: AnalysisConfig
    stats: dict[str, Any]
    provenance: Provenance
    out_dir: Path | None
    files: dict[str, Path]
    implementation: str

    @property
    def tables(self) -> ReportTables:
        """The report tables, rebuilt from the stored statistics."""
        return build_tables(self.stats)


def _stored(row: Analysis, run: GenerationRun | None) -> StoredAnalysis:
    result = row.result or {}
    assert row.id is not None
    fallback = {"run": run.name if run else "", "simulated": bool(run and run.simulated)}
    return StoredAnalysis(
        id=row.id,
        created_at=row.created_at,
        config=AnalysisConfig.model_validate(row.config),
        stats=result.get("stats", {"models": {}}),
        provenance=Provenance.model_validate(result.get("provenance", fallback)),
        out_dir=Path(row.out_dir) if row.out_dir else None,
        files={k: Path(v) for k, v in result.get("files", {}).items()},
        implementation=row.implementation,
    )


def latest_analysis(
    run_name: str, *, session: Session, labeler_spec: str | None = None
) -> StoredAnalysis | None:
    """The newest stored analysis of a run (optionally of one labeler), or ``None``."""
    run = require_run(run_name, session=session)
    for row in list_analyses(session=session, run_id=run.id):
        if labeler_spec is not None and row.config.get("labeler") != labeler_spec:
            continue
        return _stored(row, run)
    return None


def get_analysis(analysis_id: int, *, session: Session) -> StoredAnalysis:
    """The stored analysis with this id.

    Raises:
        NotFoundError: no such analysis.
    """
    row = session.get(Analysis, analysis_id)
    if row is None:
        raise NotFoundError(f"No analysis {analysis_id} in this workspace.")
    return _stored(row, session.get(GenerationRun, row.run_id))


def analysis_examples(
    stored: StoredAnalysis, *, session: Session, per_class: int = 2
) -> tuple[ExamplePair, ...]:
    """Example response pairs of a stored analysis (recomputed from the stored labels).

    The drift table is rebuilt from the database rather than read from ``out_dir``, so the
    examples are available even when the report folder was moved.
    """
    name, _, number = stored.config.ontology_version.partition("@")
    version = get_version(f"{name}@{number}" if number else name, session=session)
    labeler = ensure_labeler_spec(stored.config.labeler, session=session)
    assert labeler.id is not None
    names = list(stored.config.runs) or [stored.config.run]
    trajectories, run_of = load_runs(names, stored.config.labeler, session=session, version=version)
    table = build_drift_table(trajectories, alpha=stored.config.sri_alpha)
    return select_examples(
        table.rows,
        run_of=run_of,
        labeler_id=labeler.id,
        version=version,
        per_class=per_class,
        session=session,
    )
