"""Source reliance's smallest simulated study, as the instrument checks drive it.

Twelve shipped items probed with the default settings (tier 1, every variant, one
instruction): 12 bare probes and 12 x 12 source probes. ``sim/src-null`` ignores every
source and ``sim/src-impressionable`` adopts what it is told (PAR+ 1 vs 0.35, SDR+ 0 vs
0.9), so their rates differ on a dozen items; an interruption is a run of the first items
only (the stored run's own resumable path, :func:`study.sources.store.run_stored_sources`
with an item scope), and the sharded run is :func:`study.sources.sharded.run_sources_sharded`.
``sim/src-hostile`` ends every reply in hostile text after its letter (the report, its
downloads and ``sources show`` on the terminal must show it as text).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from driftlens_plugins import RunOutcome, StudyKit
from llm.sim.hostile import HOSTILE_VISIBLE

#: Items of the smallest study (the first of the shipped sample).
N_ITEMS = 12


def _items() -> list[Any]:
    from study.sources.items import shipped_items

    return shipped_items()[:N_ITEMS]


def _stored(name: str, *, session: Session) -> int:
    from storage.repo.sources import get_source_run
    from storage.source_models import SourceProbe

    row = get_source_run(name, session=session)
    if row is None:
        return 0
    return int(
        session.exec(
            select(func.count()).select_from(SourceProbe).where(col(SourceProbe.run_id) == row.id)
        ).one()
    )


def _run(
    name: str,
    *,
    model: str,
    session: Session,
    settings: Any,
    limit: int | None = None,
    executor: Any = None,
    per_shard: int | None = None,
) -> RunOutcome:
    from llm.specs import ModelSpec
    from study.cluster.coordinator import ShardedPass
    from study.cluster.shards import ShardScope
    from study.sources.plan import SourcesConfig
    from study.sources.sharded import planned_probes, run_sources_sharded
    from study.sources.sim.wiring import backend_for
    from study.sources.store import run_stored_sources

    spec = ModelSpec.parse(model)  # the kit's edge: a job's JSON arguments hold text
    items, configs = _items(), [SourcesConfig()]
    total = planned_probes(items, configs)
    before = _stored(name, session=session)
    if executor is not None:
        sharding = ShardedPass(session=session, settings=settings, executor=executor,
                               per_shard=per_shard or 4)  # fmt: skip
        run_sources_sharded(name, items, spec, configs, sharding=sharding)
    else:
        scope = None
        if limit is not None:  # the first items only: an interruption between items
            per_item = total // len(items)
            keep = max(1, min(len(items) - 1, math.ceil(limit / per_item)))
            ids = frozenset(it.id for it in items[:keep])
            scope = ShardScope[str](keys=ids, lease_key=f"source_run:{name}#partial")
        run_stored_sources(name, items, backend_for(spec, items), configs, session=session,
                           scope=scope)  # fmt: skip
    session.commit()
    stored = _stored(name, session=session)
    return RunOutcome(run=name, stored=stored, added=stored - before, total=total)


def _report(runs: Sequence[str], out: Path, *, session: Session) -> Path:
    import pandas as pd

    from study.safe_csv import write_frame_csv
    from study.sources.analysis import analyze_sources_table
    from study.sources.report import write_sources_report
    from study.sources.store import stored_run_table

    table = pd.concat([stored_run_table(r, session=session) for r in runs], ignore_index=True)
    result = analyze_sources_table(table, bootstrap=200, seed=0).to_dict()
    out.mkdir(parents=True, exist_ok=True)
    files = write_sources_report(result, table, out, title=f"Source reliance — {', '.join(runs)}",
                                 simulated=True)  # fmt: skip
    write_frame_csv(table, out / "probes.csv")
    return files.html


def _terminal(runs: Sequence[str], out: Path) -> list[str]:
    """``driftlens sources show`` of the first run: its probe replies as written."""
    return ["sources", "show", "--run", runs[0], "--limit", "4"]


def study_kit() -> StudyKit:
    """Two opposite behaviours on twelve items, and ``sim/src-hostile`` (src-null's letters,
    every reply ending in hostile text)."""
    return StudyKit(
        models=("sim/src-null", "sim/src-impressionable"),
        run=_run,
        report=_report,
        job="run",
        hostile_model="sim/src-hostile",
        terminal=_terminal,
        hostile_text=HOSTILE_VISIBLE,
    )
