"""``disposition run`` on an executor: shards of stems, in two waves.

A disposition study's natural unit is the response (arm, battery, stem, paraphrase,
sample); a shard is one arm's probes of ``per_shard`` stems (every paraphrase and sample
of them). Seeds derive from the probe and the sample only (:mod:`study.disposition.plan`),
each response stores its index in the arm's plan, and the second-pass samples are drawn
from the natural keys (:mod:`study.disposition.draw`), so the study the shards store is
the one a single process stores, whatever order its rows arrive in.

The coordinator holds the study's lease (``disposition_run:STUDY``, the one a
single-process ``disposition run`` takes) for both waves:

1. each shard task generates its probes (re-asks included) and classifies its answers;
2. the coordinator draws the classifier's repeat, the graded share and the awareness
   share over the whole study, exactly as one process draws them, and each shard task
   scores its drawn responses a second time, grades them and rates their awareness.

Every write is an idempotent upsert keyed by the natural key (responses) or by
(response, kind, repeat, judge) (scores), under a shard lease, so a retried task stores
nothing twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from sqlalchemy import func
from sqlmodel import Session, col, select

from llm.specs import ModelSpec
from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
from storage.repo.chunks import id_chunks
from storage.settings import Settings
from study.cluster.coordinator import (
    ShardedPass,
    heartbeat_poll,
    progress_report,
    under_shard_lease,
)
from study.cluster.merge import merge_parts
from study.cluster.shards import shard_keys
from study.disposition.draw import AWARENESS_SEED, GRADED_SEED, REPEAT_SEED, ScoreScope
from study.disposition.generate import ArmRunSummary
from study.disposition.items import BatteryDocument
from study.disposition.score import ScoreSummary

P = TypeVar("P")
R = TypeVar("R")

StageFactory = Callable[[str], Callable[[int, int], None]]
#: A shard's unit: (arm name, battery, stem).
StemKey = tuple[str, str, str]


@dataclass(frozen=True)
class DispositionShardTask:
    """One shard of a disposition study: one arm's probes of some stems."""

    settings: Settings
    study: str
    arm: str
    stems: frozenset[tuple[str, str]]
    batteries: BatteryDocument
    judge: ModelSpec
    concurrency: int
    lease_key: str


@dataclass(frozen=True)
class DispositionDrawnTask:
    """The second wave of a shard: its responses in the study's seeded samples."""

    settings: Settings
    study: str
    arms: tuple[str, ...]
    batteries: BatteryDocument
    judge: ModelSpec
    concurrency: int
    lease_key: str
    repeat: frozenset[int]
    graded: frozenset[int] | None
    awareness: frozenset[int] | None


def _arms(study: str, names: Sequence[str], *, session: Session) -> list[DispositionArm]:
    from storage.repo.disposition import require_arms

    return [a for a in require_arms(study, session=session) if a.name in set(names)]


def disposition_shard(task: DispositionShardTask) -> tuple[ArmRunSummary, ScoreSummary]:
    """Generate and classify one shard (in a worker process): own session and backends."""
    from study.disposition.generate import generate_arm
    from study.disposition.runs import arm_backend
    from study.disposition.score import classify_arms

    def work(session: Session) -> tuple[ArmRunSummary, ScoreSummary]:
        (arm,) = _arms(task.study, [task.arm], session=session)
        gen = generate_arm(
            arm,
            task.batteries,
            session=session,
            backend=arm_backend(arm, task.batteries),
            concurrency=task.concurrency,
            stems=task.stems,
        )
        mine = shard_responses(arm, task.stems, session=session)
        scores = classify_arms(
            [arm],
            task.batteries,
            judge=task.judge,
            session=session,
            concurrency=task.concurrency,
            scope=ScoreScope(responses=frozenset(mine), drawn=frozenset()),
        )
        return gen, scores

    return under_shard_lease(
        task.settings, task.lease_key, f"Disposition shard {task.lease_key!r}", work
    )


def disposition_drawn_shard(task: DispositionDrawnTask) -> ScoreSummary:
    """Score one shard's drawn responses again, grade them, rate their awareness."""
    from study.disposition.awareness import rate_awareness
    from study.disposition.score import classify_arms, grade_arms

    def work(session: Session) -> ScoreSummary:
        arms = _arms(task.study, task.arms, session=session)
        scores = classify_arms(
            arms,
            task.batteries,
            judge=task.judge,
            session=session,
            concurrency=task.concurrency,
            scope=ScoreScope(responses=frozenset(), drawn=task.repeat),
        )
        # the graded review and the awareness judge: the same call over their own draws
        for drawn, second_pass in (
            (task.graded, partial(grade_arms, arms, task.batteries)),
            (task.awareness, partial(rate_awareness, arms)),
        ):
            if drawn is not None:
                second_pass(
                    judge=task.judge,
                    session=session,
                    concurrency=task.concurrency,
                    scope=ScoreScope(responses=frozenset(), drawn=drawn),
                )
        return scores

    return under_shard_lease(
        task.settings, task.lease_key, f"Disposition shard {task.lease_key!r}", work
    )


def shard_responses(
    arm: DispositionArm, stems: frozenset[tuple[str, str]], *, session: Session
) -> set[int]:
    """The ids of ``arm``'s stored responses to the probes of ``stems``."""
    names = sorted({stem for _, stem in stems})
    rows = session.exec(
        select(DispositionResponse.id, DispositionResponse.battery, DispositionResponse.stem)
        .where(DispositionResponse.arm_id == arm.id)
        .where(col(DispositionResponse.stem).in_(names))
    ).all()
    return {int(rid) for rid, battery, stem in rows if rid is not None and (battery, stem) in stems}


def _stem_shards(
    arms: Sequence[DispositionArm], batteries: BatteryDocument, per_shard: int
) -> list[tuple[str, frozenset[tuple[str, str]]]]:
    """(arm name, its stems) per shard: each arm's stems, sorted, ``per_shard`` a shard."""
    stems = sorted({(p.battery, p.stem) for p in batteries.probes()})
    return [
        (arm.name, frozenset(group))
        for arm in arms
        for group in shard_keys(stems, per_shard=per_shard)
    ]


def run_study_sharded(
    study: str,
    batteries: BatteryDocument,
    *,
    sharding: ShardedPass,
    judge: ModelSpec,
    arms: list[str] | None = None,
    concurrency: int = 16,
    repeat_share: float = 0.1,
    grade_share: float = 0.0,
    awareness_share: float = 0.0,
    stage: StageFactory | None = None,
    allow_self_judging: bool = False,
) -> tuple[list[ArmRunSummary], ScoreSummary]:
    """Run (or resume) a disposition study with its stem shards on ``sharding.executor``.

    The same arguments and results as :func:`study.disposition.runs.run_study` (one
    summary per arm, the classifier's summary), ``sharding.per_shard`` stems a shard.
    Its two waves report through ``stage(name)``, not ``sharding.progress``: the
    responses stored by every worker over the plan, then the second scorings over the
    drawn responses.

    Raises:
        NotFoundError, InputError: as :func:`study.disposition.runs.run_study`.
        LeaseHeldError: another process runs this study.
        ServiceError: a lost task (:mod:`study.cluster.ray_executor`).
    """
    from study.disposition.draw import drawn_ids
    from study.disposition.runs import judged_arms
    from study.run_setup import run_lease

    session, settings = sharding.session, sharding.settings
    judge_name = str(judge)  # the judge's stored name: its scores, draws and summary
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
        on_plan=sharding.on_plan,
    )
    arm_ids = [a.id for a in rows]
    total = sum(len(batteries.probes()) * a.samples for a in rows)
    shards = _stem_shards(rows, batteries, sharding.per_shard)
    parent = f"disposition_run:{study}"

    def stored() -> int:
        return int(
            session.exec(
                select(func.count())
                .select_from(DispositionResponse)
                .where(col(DispositionResponse.arm_id).in_(arm_ids))
            ).one()
        )

    with run_lease(parent, session=session, what=f"Disposition study {study!r}") as lease:

        def wave(
            fn: Callable[[P], R], payloads: list[P], name: str, of: int, done: Callable[[], int]
        ) -> list[R]:
            """One wave of shard tasks, its progress ``stage(name)``: ``done()`` of ``of``."""
            report = progress_report(stage(name) if stage else None, of, done, session=session)
            return sharding.executor.map(
                fn, payloads, poll=heartbeat_poll(lease, session=session, report=report)
            )

        first = [
            DispositionShardTask(
                settings, study, arm, stems, batteries, judge, concurrency, f"{parent}#shard:{i}"
            )
            for i, (arm, stems) in enumerate(shards)
        ]
        parts = wave(disposition_shard, first, "responses", total, stored)
        session.commit()  # a fresh snapshot: every worker's responses and scores
        draws = {
            "repeat": drawn_ids(
                rows, session=session, judge=judge_name, kind="category",
                share=repeat_share, seed=REPEAT_SEED,
            ),
            "graded": drawn_ids(
                rows, session=session, judge=judge_name, kind="graded",
                share=grade_share, seed=GRADED_SEED,
            ),
            "awareness": drawn_ids(
                rows, session=session, judge=judge_name, kind="awareness",
                share=awareness_share, seed=AWARENESS_SEED,
            ),
        }  # fmt: skip
        by_shard = _drawn_by_shard(rows, shards, draws, session=session)
        names = tuple(a.name for a in rows)
        second = [
            DispositionDrawnTask(
                settings, study, names, batteries, judge, concurrency, f"{parent}#drawn:{i}",
                repeat=frozenset(mine["repeat"]),
                graded=frozenset(mine["graded"]) if grade_share > 0 else None,
                awareness=frozenset(mine["awareness"]) if awareness_share > 0 else None,
            )
            for i, mine in by_shard
        ]  # fmt: skip

        def repeated() -> int:
            return _second_scorings(draws["repeat"], judge_name, session=session)

        again = wave(
            disposition_drawn_shard, second, "scored twice", len(draws["repeat"]), repeated
        )
    return _merged(rows, parts, again, judge=judge_name)


def _drawn_by_shard(
    arms: Sequence[DispositionArm],
    shards: Sequence[tuple[str, frozenset[tuple[str, str]]]],
    draws: dict[str, set[int]],
    *,
    session: Session,
) -> list[tuple[int, dict[str, set[int]]]]:
    """Each shard's drawn responses, per sample; shards with none are left out."""
    wanted = set().union(*draws.values())
    by_arm = {a.id: a.name for a in arms}
    where: dict[StemKey, int] = {
        (arm, battery, stem): i for i, (arm, stems) in enumerate(shards) for battery, stem in stems
    }
    out: dict[int, dict[str, set[int]]] = defaultdict(lambda: {k: set() for k in draws})
    for part in id_chunks(sorted(wanted)):
        for rid, arm_id, battery, stem in session.exec(
            select(
                DispositionResponse.id,
                DispositionResponse.arm_id,
                DispositionResponse.battery,
                DispositionResponse.stem,
            ).where(col(DispositionResponse.id).in_(part))
        ).all():
            i = where[(by_arm[arm_id], battery, stem)]
            for kind, ids in draws.items():
                if rid in ids:
                    out[i][kind].add(int(rid))
    return sorted(out.items())


def _second_scorings(ids: set[int], judge: str, *, session: Session) -> int:
    """How many of ``ids`` the classifier ``judge`` scored a second time (every worker's)."""
    wanted = sorted(ids)
    done = 0
    for part in id_chunks(wanted):
        done += int(
            session.exec(
                select(func.count())
                .select_from(DispositionScore)
                .where(col(DispositionScore.response_id).in_(part))
                .where(DispositionScore.kind == "category")
                .where(DispositionScore.repeat == 1)
                .where(DispositionScore.judge_model == judge)
            ).one()
        )
    return done


def _merged(
    arms: Sequence[DispositionArm],
    parts: Sequence[tuple[ArmRunSummary, ScoreSummary]],
    again: Sequence[ScoreSummary],
    *,
    judge: str,
) -> tuple[list[ArmRunSummary], ScoreSummary]:
    """One summary per arm and one of the classifier, as one process reports them."""
    summaries = []
    for arm in arms:
        mine = [gen for gen, _ in parts if gen.arm == arm.name]
        routes = [g.budget_route for g in mine if g.budget_route]
        notes = [g.budget_note for g in mine if g.budget_note]
        summaries.append(
            merge_parts(
                ArmRunSummary,
                mine,
                tallies=("attempts_histogram", "failed_kinds"),
                arm=arm.name,
                budget_route=routes[0] if routes else None,
                budget_note=notes[0] if notes else None,
            )
        )
    scores = [s for _, s in parts] + list(again)
    judge_model = scores[0].judge_model if scores else judge
    return summaries, merge_parts(ScoreSummary, scores, judge_model=judge_model)
