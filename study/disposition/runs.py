"""Arms of a study and running them: backends, generation, classification, analysis files.

The service functions the CLI, the app page and the demo call; sessions are passed in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session

from llm.specs import ModelSpec
from llm.types import ChatBackend
from storage.disposition_models import ARM_ROLE_VALUES, DispositionArm
from storage.errors import InputError
from storage.repo.disposition import add_arm, require_arms
from study.disposition.analysis import StudyAnalysis, analyze_study
from study.disposition.generate import ArmRunSummary, generate_arm
from study.disposition.items import BatteryDocument
from study.disposition.plan import Reasoning
from study.disposition.score import ScoreSummary, classify_arms, grade_arms
from study.safe_csv import write_frame_csv

StageFactory = Callable[[str], Callable[[int, int], None]]


@dataclass(frozen=True)
class ArmSpec:
    """An arm as the user describes it (``driftlens disposition arms add``)."""

    name: str
    model: ModelSpec
    role: str = "treatment"
    dose: float | None = None
    train_seed: int | None = None
    training_set_hash: str | None = None
    reasoning: str = "on"
    server_instance: str | None = None
    samples: int = 2
    max_reasks: int = 3
    max_tokens: int | None = None
    temperature: float | None = None
    budget_route: str = "auto"

    def row(self, study: str) -> DispositionArm:
        """The row to store.

        Raises:
            InputError: a bad role, reasoning setting, sample count or model spec.
        """
        if self.role not in ARM_ROLE_VALUES:
            raise InputError(
                f"--role must be one of {', '.join(ARM_ROLE_VALUES)}, not {self.role!r}."
            )
        try:
            r = Reasoning.parse(self.reasoning)
        except ValueError as exc:
            raise InputError(f"--reasoning: {exc}.") from None
        from study import limits

        limits.DISPOSITION_SAMPLES.check(self.samples)
        limits.DOSE.check(self.dose)
        limits.MAX_TOKENS.check(self.max_tokens)
        limits.TEMPERATURE.check(self.temperature)
        if not 0 <= self.max_reasks <= 3:
            raise InputError("--max-reasks must lie in 0..3.")
        from study.disposition.generate import BUDGET_ROUTES

        if self.budget_route not in BUDGET_ROUTES:
            raise InputError(
                f"--budget-route must be one of {', '.join(BUDGET_ROUTES)}, "
                f"not {self.budget_route!r}."
            )
        sampling: dict[str, Any] = {}
        if self.max_tokens is not None:
            sampling["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            sampling["temperature"] = self.temperature
        return DispositionArm(
            study=study,
            name=self.name,
            model=str(self.model),  # stored as its canonical text
            role=self.role,
            dose=self.dose,
            train_seed=self.train_seed,
            training_set_hash=self.training_set_hash,
            reasoning=r.mode,
            budget=r.budget,
            filler=r.filler if r.mode == "filler" else None,
            server_instance=self.server_instance,
            samples=self.samples,
            max_reasks=self.max_reasks,
            config={"version": 1, "sampling": sampling, "budget_route": self.budget_route},
        )


def add_arms(
    study: str, specs: list[ArmSpec], *, session: Session, replace: bool = False
) -> list[DispositionArm]:
    """Store arms (committed)."""
    rows = [add_arm(s.row(study), session=session, replace=replace) for s in specs]
    session.commit()
    return rows


def arm_backend(
    arm: DispositionArm, batteries: BatteryDocument, *, env: Mapping[str, str] | None = None
) -> ChatBackend | ModelSpec:
    """The backend of an arm: ``sim/disp-*`` arms run in-process with the battery registry."""
    info = ModelSpec.parse(arm.model)  # the stored row holds the spec as text
    if info.simulated:
        from study.disposition.sim.responder import DispositionSimBackend, parse_arm_model
        from study.disposition.sim_endpoint import probe_index, probe_registry

        if parse_arm_model(info.model) is not None:
            return DispositionSimBackend(
                info.model, probe_registry(batteries), index=probe_index(batteries)
            )
    if env is not None:
        from llm.backends import get_backend

        return get_backend(info, env=dict(env))
    return info


def study_arms(
    study: str,
    batteries: BatteryDocument,
    *,
    session: Session,
    arms: list[str] | None,
    concurrency: int,
    on_plan: Callable[[str], None] | None = None,
) -> list[DispositionArm]:
    """The arms a run of ``study`` generates, checked, with its plan line sent to ``on_plan``.

    Raises:
        NotFoundError: the study has no arms.
        InputError: an asked-for arm is not in the study, or a plan is too large.
    """
    from study.limits import CONCURRENCY, check_plan_size, plan_line

    CONCURRENCY.check(concurrency)
    rows = require_arms(study, session=session)
    if arms:
        unknown = sorted(set(arms) - {a.name for a in rows})
        if unknown:
            raise InputError(f"Study {study!r} has no arm {unknown[0]!r}.")
        rows = [a for a in rows if a.name in arms]
    probes = len(batteries.probes())
    for arm in rows:  # an arm stored before the bounds existed is refused here, not built
        check_plan_size(
            probes * arm.samples, what=f"arm {arm.name}: {probes} probes x {arm.samples} samples"
        )
    if on_plan is not None:
        samples = sorted({a.samples for a in rows})
        each = f"{samples[0]} samples" if len(samples) == 1 else f"{samples[0]}-{samples[-1]}"
        if len(samples) > 1:
            each += " samples (by arm)"
        total = sum(probes * a.samples for a in rows)
        on_plan(plan_line(total, what=f"{len(rows)} arms x {probes} probes x {each}"))
    return rows


def judged_arms(
    study: str,
    batteries: BatteryDocument,
    *,
    session: Session,
    judge: ModelSpec,
    arms: list[str] | None,
    concurrency: int,
    grade_share: float,
    awareness_share: float,
    allow_self_judging: bool,
    on_plan: Callable[[str], None] | None = None,
) -> list[DispositionArm]:
    """:func:`study_arms`, with the judge's roles on them checked and stored.

    The judge is the classifier, and the grader / awareness judge when a share of the
    answers is graded or rated; one playing an arm's own model is refused unless
    ``allow_self_judging`` (:func:`study.disposition.roles.judge_roles`). The one set-up of
    a run in one process and of a sharded run.
    """
    from study.disposition.roles import judge_roles

    rows = study_arms(
        study, batteries, session=session, arms=arms, concurrency=concurrency, on_plan=on_plan
    )
    roles = (
        "classifier",
        *(("grader",) if grade_share > 0 else ()),
        *(("awareness judge",) if awareness_share > 0 else ()),
    )
    judge_roles(
        study, rows, str(judge), roles=roles, session=session, allow_self=allow_self_judging
    )
    return rows


def judge_backend(judge: ModelSpec, env: Mapping[str, str] | None) -> ChatBackend | ModelSpec:
    """The classifier's backend: built from ``env`` when given (not for ``sim/`` judges)."""
    if env is not None and not judge.simulated:
        from llm.backends import get_backend

        return get_backend(judge, env=dict(env))
    return judge


def run_study(
    study: str,
    batteries: BatteryDocument,
    *,
    session: Session,
    judge: ModelSpec,
    arms: list[str] | None = None,
    env: Mapping[str, str] | None = None,
    concurrency: int = 16,
    repeat_share: float = 0.1,
    grade_share: float = 0.0,
    awareness_share: float = 0.0,
    stage: StageFactory | None = None,
    on_plan: Callable[[str], None] | None = None,
    allow_self_judging: bool = False,
) -> tuple[list[ArmRunSummary], ScoreSummary]:
    """Generate every (chosen) arm of ``study`` and classify the answers (resumable).

    The judge may not be an arm's model unless ``allow_self_judging`` (checked before
    anything is asked; the roles are stored with the study, :mod:`.roles`).

    ``grade_share`` > 0 also asks the judge for the 1–7 graded review of that share of the
    answered responses (final answer only); ``awareness_share`` > 0 asks it to rate that
    share's test awareness (1–7, :mod:`study.disposition.awareness`). ``on_plan`` is
    called with the generation plan's size as one line before it is built (re-asks and
    classification come on top).

    Raises:
        NotFoundError: the study has no arms.
        InputError: an asked-for arm is not in the study.
    """
    from study.run_setup import run_lease

    rows = judged_arms(
        study,
        batteries,
        session=session,
        judge=judge,
        arms=arms,
        concurrency=concurrency,
        grade_share=grade_share,
        awareness_share=awareness_share,
        allow_self_judging=allow_self_judging,
        on_plan=on_plan,
    )
    # one process per study: a second would ask every request of the plan again
    with run_lease(
        f"disposition_run:{study}", session=session, what=f"Disposition study {study!r}"
    ):
        return _run_study(
            rows,
            batteries,
            session=session,
            judge=judge,
            env=env,
            concurrency=concurrency,
            repeat_share=repeat_share,
            grade_share=grade_share,
            awareness_share=awareness_share,
            stage=stage,
        )


def _run_study(
    rows: list[DispositionArm],
    batteries: BatteryDocument,
    *,
    session: Session,
    judge: ModelSpec,
    env: Mapping[str, str] | None,
    concurrency: int,
    repeat_share: float,
    grade_share: float,
    awareness_share: float,
    stage: StageFactory | None,
) -> tuple[list[ArmRunSummary], ScoreSummary]:
    summaries = []
    for arm in rows:
        summaries.append(
            generate_arm(
                arm,
                batteries,
                session=session,
                backend=arm_backend(arm, batteries, env=env),
                concurrency=concurrency,
                progress=stage(f"arm {arm.name}") if stage else None,
            )
        )
    judge_target = judge_backend(judge, env)
    scores = classify_arms(
        rows,
        batteries,
        judge=judge_target,
        session=session,
        repeat_share=repeat_share,
        concurrency=concurrency,
        progress=stage("classifying") if stage else None,
    )
    if grade_share > 0:
        grade_arms(
            rows,
            batteries,
            judge=judge_target,
            session=session,
            share=grade_share,
            concurrency=concurrency,
        )
    if awareness_share > 0:
        from study.disposition.awareness import rate_awareness

        rate_awareness(
            rows,
            judge=judge_target,
            session=session,
            share=awareness_share,
            concurrency=concurrency,
            progress=stage("rating awareness") if stage else None,
        )
    return summaries, scores


def write_analysis(analysis: StudyAnalysis, out_dir: Path) -> dict[str, Path]:
    """Write every group's rate table (CSV) and statistics (JSON) plus the arm info."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for g in analysis.groups:
        slug = g.group.replace(" ", "-")
        table = out_dir / f"rates_{slug}.csv"
        write_frame_csv(g.table.astype({"aligned": str}), table)
        stats = out_dir / f"stats_{slug}.json"
        data = g.stats.to_dict()
        if analysis.calibrated is not None:
            # which is the headline, both estimates and the human labels (issue 35)
            cal = analysis.calibrated.to_dict()
            cal["rows"] = [r for r in cal["rows"] if r["group"] == g.group]
            data["calibrated"] = cal
        stats.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
        files[f"rates_{slug}"] = table
        files[f"stats_{slug}"] = stats
        if g.graded is not None and g.graded_table is not None:
            gt = out_dir / f"graded_{slug}.csv"
            write_frame_csv(g.graded_table, gt)
            gs = out_dir / f"stats_{slug}_graded.json"
            gs.write_text(json.dumps(g.graded.to_dict(), indent=2, allow_nan=False) + "\n")
            files[f"graded_{slug}"] = gt
            files[f"stats_{slug}_graded"] = gs
    if analysis.awareness is not None:
        aw = out_dir / "awareness.json"
        aw.write_text(json.dumps(analysis.awareness.to_dict(), indent=2, allow_nan=False) + "\n")
        files["awareness"] = aw
    arms = out_dir / "arms.json"
    arms.write_text(
        json.dumps({k: vars(v) for k, v in analysis.arms.items()}, indent=2, default=str) + "\n"
    )
    files["arms"] = arms
    return files


__all__ = [
    "ArmSpec",
    "add_arms",
    "analyze_study",
    "arm_backend",
    "run_study",
    "write_analysis",
]
