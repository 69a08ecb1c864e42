"""Memory conflicts' smallest simulated study, as the instrument checks drive it.

The shipped bank sample at one dose (6) and two samples, judged by ``sim/judge-lenient``:
``sim/mc-balanced`` and ``sim/mc-literal`` explain the conflict differently (the D2 rubric
dimension separates them, as in ``tests/calibration``). An interruption is a run of the
first banks only (the run's own resumable path, :func:`study.conflicts.plan.generate_conflicts`
with a bank scope); the sharded run is
:func:`study.conflicts.sharded.generate_conflicts_sharded`. Every call judges what the run
holds (judging resumes too), since the comparison reads judged answers. The conflict rubric
study takes its tasks from a run, and the simulated annotator pool answers it.
``sim/mc-hostile`` ends every answer in hostile text (the report, its downloads and
``conflicts show`` on the terminal must show it as text).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlmodel import Session

from driftlens_plugins import RunOutcome, StudyKit
from llm.sim.hostile import HOSTILE_VISIBLE

#: The judge of every kit run (the comparison reads its scores).
JUDGE = "sim/judge-lenient"


def _stored(name: str, *, session: Session) -> int:
    from storage.repo.runs import get_run
    from study.cluster.coordinator import response_count

    row = get_run(name, session=session)
    return 0 if row is None else response_count(row.id, session=session)


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
    from study.conflicts.items import import_bank_file, stored_instances
    from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
    from study.conflicts.score import judge_conflict_run
    from study.conflicts.sharded import generate_conflicts_sharded

    banks = [q for q, _ in stored_instances(session=session)]
    if not banks:
        import_bank_file(None, session=session)
        session.commit()
        banks = [q for q, _ in stored_instances(session=session)]
    # the kit's edge: a job's JSON arguments hold the spec as text
    spec = ModelSpec.parse(model)
    options = ConflictGenerationOptions(model=spec, run=name, doses=(6,), samples=2, seed=4)
    total = len(banks) * len(options.doses) * options.samples
    before = _stored(name, session=session)
    if executor is not None:
        sharding = ShardedPass(session=session, settings=settings, executor=executor,
                               per_shard=per_shard or 8)  # fmt: skip
        generate_conflicts_sharded(options, sharding=sharding)
    else:
        scope = None
        if limit is not None:  # the first banks only: an interruption between banks
            per_bank = len(options.doses) * options.samples
            keep = max(1, min(len(banks) - 1, math.ceil(limit / per_bank)))
            scope = ShardScope[int](keys=frozenset(sorted(banks)[:keep]),
                                    lease_key=f"conflicts_run:{name}#partial")  # fmt: skip
        generate_conflicts(options, session=session, scope=scope)
    session.commit()
    judge_conflict_run(name, ModelSpec.parse(JUDGE), session=session)
    session.commit()
    stored = _stored(name, session=session)
    return RunOutcome(run=name, stored=stored, added=stored - before, total=total)


def _report(runs: Sequence[str], out: Path, *, session: Session) -> Path:
    """The report of the runs and the Memory conflicts page's answers download (its CSV,
    as the page's button builds it)."""
    from study.conflicts.report import build_report
    from study.conflicts.setup import answers_frame
    from study.downloads import frame_bytes

    report = build_report(list(runs), session=session, out_dir=out, bootstrap=200)
    (out / "answers.csv").write_bytes(frame_bytes(answers_frame(runs, session=session), "csv"))
    return Path(report.files["report_html"])


def _terminal(runs: Sequence[str], out: Path) -> list[str]:
    """``driftlens conflicts show`` of the first run: its answers and the judge's reasons."""
    return ["conflicts", "show", "--run", runs[0], "--limit", "4"]


def study_kit() -> StudyKit:
    """Two simulated memory behaviours on the shipped banks, judged and human-checked, and
    ``sim/mc-hostile`` (mc-balanced's moves, every answer ending in hostile text)."""
    return StudyKit(
        models=("sim/mc-balanced", "sim/mc-literal"),
        run=_run,
        report=_report,
        job="run",
        hostile_model="sim/mc-hostile",
        human_kinds=("conflict_rubric",),
        judges=(JUDGE, "sim/judge-strict"),
        terminal=_terminal,
        hostile_text=HOSTILE_VISIBLE,
    )
