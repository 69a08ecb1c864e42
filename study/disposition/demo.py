"""``driftlens disposition demo``: a whole disposition study on the simulator, offline.

Arms with known doses (the seed's Table 5 shape) answer the shipped sample batteries twice
through the shared request path (batch runner and cache) with the in-process simulator;
the simulated classifier sorts the answers, and the simulated judges grade a quarter of them
(1–7 review) and rate another seeded quarter's test awareness; the analysis and the report
follow.
Running it again resumes from what is stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlmodel import Session

from llm.specs import ModelSpec, parse_spec
from storage.repo.disposition import get_arm
from study.disposition.analysis import StudyAnalysis, analyze_study
from study.disposition.generate import ArmRunSummary
from study.disposition.items import load_sample_batteries
from study.disposition.prereg import demo_plan
from study.disposition.runs import ArmSpec, StageFactory, add_arms, run_study, write_analysis
from study.disposition.score import ScoreSummary

DEMO_STUDY = "demo-disposition"
DEMO_PRESET = "disp-qwen"
DEMO_JUDGE = "sim/default"


def _model(dose: float, train_seed: int = 0) -> ModelSpec:
    from study.disposition.sim.responder import arm_model_name

    return parse_spec(f"sim/{arm_model_name(DEMO_PRESET, dose, train_seed)}")


def _dose_arm(name: str, dose: int, reasoning: str, server: str) -> ArmSpec:
    """One point of a dose curve (train seed 1): the reference at dose 0, a treatment above."""
    return ArmSpec(
        name=f"{name}-d{dose:03d}",
        model=_model(dose),
        role="reference" if dose == 0 else "treatment",
        dose=float(dose),
        train_seed=1,
        reasoning=reasoning,
        server_instance=server,
    )


def demo_arms() -> list[ArmSpec]:
    """The demo's arms: dose curves with reasoning on and off, a budget and a filler pair."""
    arms = [_dose_arm("on", dose, "on", "sim-a") for dose in (0, 75, 90, 100)]
    arms.append(
        ArmSpec(
            name="on-d075-seed2",
            model=_model(75, 2),
            dose=75.0,
            train_seed=2,
            reasoning="on",
            server_instance="sim-a",
        )
    )
    arms += [_dose_arm("off", dose, "off", "sim-a") for dose in (0, 25, 75, 100)]
    for mode in ("budget:256", "filler:256"):
        tag = mode.split(":")[0]
        arms += [_dose_arm(f"{tag}256", dose, mode, "sim-b") for dose in (0, 75)]
    return arms


@dataclass(frozen=True)
class DemoResult:
    """What the disposition demo did and wrote."""

    study: str
    generation: list[ArmRunSummary]
    scoring: ScoreSummary
    analysis: StudyAnalysis
    files: dict[str, Path]
    seconds: dict[str, float] = field(default_factory=dict)


def run_disposition_demo(
    *,
    session: Session,
    out_dir: Path,
    bootstrap: int = 10_000,
    concurrency: int = 32,
    stage: StageFactory | None = None,
) -> DemoResult:
    """Run (or resume) the disposition demo and write its report into ``out_dir``."""
    from study.disposition.report import write_disposition_report
    from study.report.folder import final_paths, staged_report_folder

    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    batteries = load_sample_batteries()
    new = [a for a in demo_arms() if get_arm(DEMO_STUDY, a.name, session=session) is None]
    if new:
        add_arms(DEMO_STUDY, new, session=session)
    # In-process simulator arms: the same replies the served simulator gives (the HTTP
    # route is exercised by tests/disposition/test_served.py), at a fraction of the cost,
    # so the demo takes seconds.
    generation, scoring = run_study(
        DEMO_STUDY,
        batteries,
        session=session,
        judge=parse_spec(DEMO_JUDGE),
        concurrency=concurrency,
        grade_share=0.25,
        awareness_share=0.25,
        stage=stage,
    )
    seconds["generate+classify"] = time.perf_counter() - t0
    plan = demo_plan()
    analysis = analyze_study(
        DEMO_STUDY, session=session, n_boot=bootstrap, seed=0, bound_pp=plan.bound_pp
    )
    # The folder is replaced as a whole: a killed demo leaves the previous report.
    with staged_report_folder(out_dir) as work:
        written = write_analysis(analysis, work)
        written.update(write_disposition_report(analysis, work, plan=plan))
    files = final_paths(written, work, out_dir)
    seconds["analyse+report"] = time.perf_counter() - t0 - seconds["generate+classify"]
    return DemoResult(DEMO_STUDY, generation, scoring, analysis, files, seconds)
