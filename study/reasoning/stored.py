"""Stored analyses read back for display (the app's Analysis page, the CLI)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session

from ontology.labelers.registry import ensure_labeler_spec
from ontology.versions import get_version
from storage.errors import NotFoundError
from storage.models import Analysis, GenerationRun
from storage.paths import resolve_stored_path
from storage.repo.analyses import list_analyses
from storage.repo.runs import require_run
from study.reasoning.config import AnalysisConfig
from study.reasoning.examples import choose_examples, example_pairs
from study.reasoning.report import ExamplePair, Provenance, ReportTables, build_tables
from study.reasoning.trajectories import drift_table_by_run, run_labels


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
        examples: the example pairs the analysis chose (``None``: stored before they were).
    """

    id: int
    created_at: datetime
    config: AnalysisConfig
    stats: dict[str, Any]
    provenance: Provenance
    out_dir: Path | None
    files: dict[str, Path]
    implementation: str
    examples: tuple[dict[str, Any], ...] | None = None

    @property
    def tables(self) -> ReportTables:
        """The report tables, rebuilt from the stored statistics."""
        return build_tables(self.stats)


def _stored(row: Analysis, run: GenerationRun | None, *, session: Session) -> StoredAnalysis:
    result = row.result or {}
    assert row.id is not None
    fallback = {"run": run.name if run else "", "simulated": bool(run and run.simulated)}
    return StoredAnalysis(
        id=row.id,
        created_at=row.created_at,
        config=AnalysisConfig.model_validate(row.config),
        stats=result.get("stats", {"models": {}}),
        provenance=Provenance.model_validate(result.get("provenance", fallback)),
        out_dir=resolve_stored_path(row.out_dir, session=session) if row.out_dir else None,
        files={
            k: resolve_stored_path(v, session=session) for k, v in result.get("files", {}).items()
        },
        implementation=row.implementation,
        examples=tuple(result["examples"]) if "examples" in result else None,
    )


def latest_analysis(
    run_name: str, *, session: Session, labeler_spec: str | None = None
) -> StoredAnalysis | None:
    """The newest stored analysis of a run (optionally of one labeler), or ``None``."""
    run = require_run(run_name, session=session)
    for row in list_analyses(session=session, run_id=run.id):
        if labeler_spec is not None and row.config.get("labeler") != labeler_spec:
            continue
        return _stored(row, run, session=session)
    return None


def get_analysis(analysis_id: int, *, session: Session) -> StoredAnalysis:
    """The stored analysis with this id.

    Raises:
        NotFoundError: no such analysis.
    """
    row = session.get(Analysis, analysis_id)
    if row is None:
        raise NotFoundError(f"No analysis {analysis_id} in this workspace.")
    return _stored(row, session.get(GenerationRun, row.run_id), session=session)


@dataclass(frozen=True)
class ExamplePage:
    """One page of an analysis's example pairs and where it lies among them all.

    Attributes:
        pairs: this page's pairs, read with their steps and labels.
        total: example pairs the analysis chose (all pages).
        offset: index of this page's first pair among them.
        limit: the page size asked for (``None``: every pair).
        version: result layout version.
    """

    pairs: tuple[ExamplePair, ...]
    total: int
    offset: int
    limit: int | None
    version: int = 1

    @property
    def pages(self) -> int:
        """How many pages of ``limit`` pairs there are (at least 1)."""
        if not self.limit:
            return 1
        return max(1, -(-self.total // self.limit))


def chosen_examples(
    stored: StoredAnalysis, *, session: Session, per_class: int | None = None
) -> list[dict[str, Any]]:
    """The example records of an analysis (model, question, condition, sample, drift).

    An analysis stores the records it chose, so this reads nothing. Analyses stored before
    that (or a ``per_class`` other than the analysis's own) rebuild the drift table from
    the database, one run at a time: slow on a large study.
    """
    per_class = stored.config.examples_per_class if per_class is None else per_class
    if stored.examples is not None and per_class == stored.config.examples_per_class:
        return list(stored.examples)
    version = get_version(_version_ref(stored), session=session)
    names = list(stored.config.runs) or [stored.config.run]
    table = drift_table_by_run(
        run_labels(names, session=session),
        stored.config.labeler,
        session=session,
        version=version,
        alpha=stored.config.sri_alpha,
    )
    return choose_examples(table.rows, per_class=per_class)


def _version_ref(stored: StoredAnalysis) -> str:
    name, _, number = stored.config.ontology_version.partition("@")
    return f"{name}@{number}" if number else name


def example_page(
    stored: StoredAnalysis,
    *,
    session: Session,
    offset: int = 0,
    limit: int | None = None,
    chosen: list[dict[str, Any]] | None = None,
) -> ExamplePage:
    """One page of an analysis's example pairs: only that page's responses are read.

    Args:
        stored: the analysis.
        session: open session.
        offset: index of the first pair of the page.
        limit: pairs per page (``None``: all from ``offset``).
        chosen: the records of :func:`chosen_examples`, when the caller has them already.

    Raises:
        ValueError: a negative offset or a limit below 1.
    """
    if offset < 0 or (limit is not None and limit < 1):
        raise ValueError("offset must be ≥ 0 and limit ≥ 1")
    records = chosen if chosen is not None else chosen_examples(stored, session=session)
    window = records[offset : None if limit is None else offset + limit]
    pairs: tuple[ExamplePair, ...] = ()
    if window:
        version = get_version(_version_ref(stored), session=session)
        labeler = ensure_labeler_spec(stored.config.labeler, session=session)
        assert labeler.id is not None
        names = list(stored.config.runs) or [stored.config.run]
        pairs = example_pairs(
            window,
            run_of=run_labels(names, session=session),
            labeler_id=labeler.id,
            version=version,
            session=session,
        )
    return ExamplePage(pairs=pairs, total=len(records), offset=offset, limit=limit)


def analysis_examples(
    stored: StoredAnalysis, *, session: Session, per_class: int | None = None
) -> tuple[ExamplePair, ...]:
    """Every example response pair of a stored analysis (see :func:`example_page`).

    ``per_class`` defaults to the analysis's own ``examples_per_class``, whose pairs it
    stored; another value rebuilds the drift table (:func:`chosen_examples`).
    """
    chosen = chosen_examples(stored, session=session, per_class=per_class)
    return example_page(stored, session=session, chosen=chosen).pairs
