"""``sources run`` on an executor: shards of items.

A source-reliance item's probes (its bare probe first, then every tier and variant) stay
in one shard: the bare answer fixes the wrong option the other variants assert, and the
seeds derive from the item and the settings only (:mod:`study.sources.plan`), so an item's
probes are the same whichever shard asks them. The coordinator takes the run's lease
(``source_run:NAME``, the one a single-process ``sources run`` takes), checks the
settings and creates the run row with an empty scope (nothing is asked), hands out the
shards, sets the status and runs the endpoint's repeat check once; each task calls
:func:`study.sources.store.run_stored_sources` with its scope, which upserts probes keyed
by (run, instruction, tier, item, variant), so a retried shard stores nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import func
from sqlmodel import col, select

from llm.specs import ModelSpec
from storage.repo.sources import set_source_run_status
from storage.settings import Settings
from storage.source_models import SourceProbe
from storage.workspace import open_workspace_session
from study.cluster.coordinator import RunStatus, ShardedPass, run_coordinated
from study.cluster.merge import merge_parts
from study.cluster.shards import ShardScope, shard_scopes
from study.sources.items import MCQItem
from study.sources.plan import SourcesConfig
from study.sources.store import StoredRunSummary


@dataclass(frozen=True)
class SourcesShardTask:
    """One shard of a source-reliance run: every probe of its items."""

    settings: Settings
    name: str
    model: ModelSpec
    items: tuple[MCQItem, ...]
    configs: tuple[SourcesConfig, ...]
    concurrency: int
    scope: ShardScope[str]
    claims: dict[str, str] = field(default_factory=dict)


def sources_shard(task: SourcesShardTask) -> StoredRunSummary:
    """Probe one shard's items (in a worker process): own session, own backend."""
    from study.sources.sim.wiring import backend_for
    from study.sources.store import run_stored_sources

    with open_workspace_session(task.settings, migrate=False) as session:
        return run_stored_sources(
            task.name,
            task.items,
            backend_for(task.model, task.items),
            task.configs,
            session=session,
            claims=task.claims,
            concurrency=task.concurrency,
            scope=task.scope,
        )


def planned_probes(items: Sequence[MCQItem], configs: Sequence[SourcesConfig]) -> int:
    """Probes of the whole plan: per instruction, each item's bare probe and its variants."""
    return sum(
        len(items) * (1 + len(c.tiers) * sum(v != "bare" for v in c.variants)) for c in configs
    )


def run_sources_sharded(
    name: str | None,
    items: Sequence[MCQItem],
    model: ModelSpec,
    configs: Sequence[SourcesConfig],
    *,
    sharding: ShardedPass,
    claims: dict[str, str] | None = None,
    concurrency: int = 16,
) -> StoredRunSummary:
    """Run (or resume) a stored source-reliance run with its item shards on ``sharding.executor``.

    ``sharding.progress``: the run's stored probes (every worker's) over the plan.

    Raises:
        ConfigError, InputError: as :func:`study.sources.store.run_stored_sources`.
        ServiceError: a lost task (:mod:`study.cluster.ray_executor`).
    """
    from study.sources.sim.wiring import backend_for
    from study.sources.store import (
        default_run_name,
        repeat_warning_of,
        run_config,
        run_stored_sources,
    )

    session = sharding.session
    claims = claims or {}
    backend = backend_for(model, items)
    spec = backend.spec
    name = name or default_run_name(run_config(spec, items, configs, claims))
    parent = f"source_run:{name}"
    run = RunStatus(session, set_source_run_status)
    total = planned_probes(items, configs)

    def before() -> None:
        # the settings checked and the run row created here, once: no shard races to it
        setup = ShardScope[str](keys=frozenset(), lease_key=f"{parent}#setup")
        made = run_stored_sources(
            name,
            items,
            backend,
            configs,
            session=session,
            claims=claims,
            scope=setup,
            on_plan=sharding.on_plan,
        )
        run.running(made.run_id)

    def tasks() -> list[SourcesShardTask]:
        return [
            SourcesShardTask(
                settings=sharding.settings,
                name=name,
                model=model,
                items=tuple(items),
                configs=tuple(configs),
                concurrency=concurrency,
                scope=scope,
                claims=claims,
            )
            for scope in shard_scopes([it.id for it in items], parent, per_shard=sharding.per_shard)
        ]

    def stored() -> int:
        return int(
            session.exec(
                select(func.count())
                .select_from(SourceProbe)
                .where(col(SourceProbe.run_id) == run.run_id)
                .where(col(SourceProbe.status) != "failed")
            ).one()
        )

    parts = run_coordinated(
        sharding,
        parent,
        f"Source run {name!r}",
        fn=sources_shard,
        tasks=tasks,
        total=total,
        done=stored,
        before=before,
        after=run.after,
    )
    answered = sum(p.answered for p in parts)
    return merge_parts(
        StoredRunSummary,
        parts,
        name=name,
        run_id=run.run_id,
        status=run.status,
        # once per run, as one process checks it (two identical bare probes)
        repeat_warning=repeat_warning_of(backend, items[0], configs[0], claims)
        if answered
        else None,
    )
