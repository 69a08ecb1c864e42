"""``driftlens conflicts demo``: the memory-conflict instrument on the simulator, offline.

Imports the shipped sample banks; five simulated response models answer every bank at
0, 3 and 6 distractors (oracle track) and one answers banks extracted by the lossy
memory system (pipeline track); two simulated judges of different leniency score every
answer; the report is written. Idempotent: a rerun sends no request and reuses the
stored scores. Every number is simulated and labelled so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session

from llm.specs import ModelSpec, preset_name
from study.conflicts.items import BankImport, import_bank_file
from study.conflicts.plan import (
    ConflictGenerationOptions,
    ConflictGenerationSummary,
    generate_conflicts,
)
from study.conflicts.report import build_report
from study.conflicts.report.document import ConflictReport
from study.conflicts.score import ConflictJudgeSummary, judge_conflict_run

DEMO_MODELS: tuple[str, ...] = (
    "sim/mc-balanced",
    "sim/mc-hesitant",
    "sim/mc-committal",
    "sim/mc-quiet",
    "sim/mc-literal",
)
DEMO_JUDGES: tuple[str, ...] = ("sim/judge-lenient", "sim/judge-strict")
DEMO_DOSES: tuple[int, ...] = (0, 3, 6)
PIPELINE_MODEL = "sim/mc-balanced"
DEMO_SEED = 20261201

Stage = Callable[[str], Callable[[int, int], None]]


def demo_run_name(model: str, track: str = "oracle") -> str:
    """The demo's run name for a simulated model."""
    return f"conflicts-demo-{track}-{preset_name(model)}"


@dataclass(frozen=True)
class ConflictDemoResult:
    """What the conflicts demo did."""

    banks: BankImport
    generation: tuple[ConflictGenerationSummary, ...]
    judging: tuple[ConflictJudgeSummary, ...]
    report: ConflictReport


def run_conflicts_demo(
    *,
    session: Session,
    out_dir: Path,
    bootstrap: int = 2000,
    stage: Stage | None = None,
) -> ConflictDemoResult:
    """Run the conflicts demo end to end (see the module docstring)."""
    banks = import_bank_file(None, session=session)
    session.commit()
    gens: list[ConflictGenerationSummary] = []
    oracle_runs = [demo_run_name(m) for m in DEMO_MODELS]
    pipeline_runs = [demo_run_name(PIPELINE_MODEL, "pipeline")]
    jobs = [
        ConflictGenerationOptions(model=ModelSpec.parse(m), run=r, doses=DEMO_DOSES, seed=DEMO_SEED)
        for m, r in zip(DEMO_MODELS, oracle_runs, strict=True)
    ]
    jobs.append(
        ConflictGenerationOptions(
            model=ModelSpec.parse(PIPELINE_MODEL),
            run=pipeline_runs[0],
            doses=(6,),
            track="pipeline",
            seed=DEMO_SEED,
        )
    )
    for job in jobs:
        gens.append(
            generate_conflicts(
                job,
                session=session,
                progress=stage(f"conflicts: {job.run}") if stage else None,
            )
        )
    from study.conflicts.policy import POLICIES, run_policy

    policy_runs = [f"conflicts-demo-policy-{p}" for p in POLICIES]
    for policy, run in zip(POLICIES, policy_runs, strict=True):
        run_policy(
            policy,
            run,
            session=session,
            backbone=ModelSpec.parse(PIPELINE_MODEL) if policy == "caap" else None,
            seed=DEMO_SEED,
        )
    judged: list[ConflictJudgeSummary] = []
    for run in [*oracle_runs, *pipeline_runs, *policy_runs]:
        for judge in DEMO_JUDGES:
            judged.append(judge_conflict_run(run, ModelSpec.parse(judge), session=session))
    report = build_report(
        oracle_runs,
        pipeline_runs=pipeline_runs,
        policy_runs=policy_runs,
        session=session,
        out_dir=out_dir,
        bootstrap=bootstrap,
        seed=DEMO_SEED,
    )
    session.commit()
    return ConflictDemoResult(banks, tuple(gens), tuple(judged), report)
