"""The stored analyses of a workspace as one table (the Analysis page's list, linkable views).

Each stored analysis is one row per analysed run (``study.reasoning.analysis``); an
analysis of several runs side by side is listed once, under its id, with all its runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from sqlmodel import Session, select

from storage.models import GenerationRun
from storage.repo.analyses import list_analyses


@dataclass(frozen=True)
class AnalysisEntry:
    """One stored analysis as the list shows it.

    Attributes:
        id: the ``Analysis`` row id (the first row of a multi-run analysis).
        runs: every analysed run, the first being the one the analysis was started from.
        labeler: labeler spec string.
        ontology_version: ``name@N`` of the ontology version of the labels.
        bootstrap: cluster-bootstrap replicates B.
        seed: bootstrap seed.
        created_at: when it ran (UTC).
        simulated: whether any analysed run's responses came from the drift simulator.
    """

    id: int
    runs: tuple[str, ...]
    labeler: str
    ontology_version: str
    bootstrap: int
    seed: int
    created_at: datetime
    simulated: bool

    @property
    def run(self) -> str:
        """The run the analysis was started from."""
        return self.runs[0] if self.runs else ""


def list_analysis_entries(*, session: Session) -> list[AnalysisEntry]:
    """Every stored analysis, newest first (a multi-run analysis once)."""
    run_names = {r.id: r.name for r in session.exec(select(GenerationRun))}
    entries: list[AnalysisEntry] = []
    previous: tuple[int, dict[str, object]] | None = None
    for row in list_analyses(session=session):
        assert row.id is not None
        config = dict(row.config or {})
        result = dict(row.result or {})
        provenance = dict(result.get("provenance") or {})
        runs = tuple(config.get("runs") or ()) or (
            config.get("run") or run_names.get(row.run_id, ""),
        )
        # A multi-run analysis stores one row per run, with consecutive ids and one config.
        if previous is not None and previous[1] == config and previous[0] - row.id < len(runs):
            # listed under its first row's id, the id ``analyze_run`` returns
            entries[-1] = replace(entries[-1], id=row.id)
            continue
        previous = (row.id, config)
        entries.append(
            AnalysisEntry(
                id=row.id,
                runs=tuple(str(r) for r in runs),
                labeler=str(config.get("labeler", "")),
                ontology_version=str(config.get("ontology_version", "")),
                bootstrap=int(config.get("bootstrap", 0)),
                seed=int(config.get("seed", 0)),
                created_at=row.created_at,
                simulated=bool(provenance.get("simulated", False)),
            )
        )
    return entries
