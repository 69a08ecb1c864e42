"""The toy run sharded on an executor (:mod:`study.cluster`): shards of items.

The coordinator takes the run's lease, creates the run row, hands each shard task a set
of item ids under a shard lease and sets the final status; a shard stores the same
records one process would (every key derives from item and sample only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from driftlens_plugins import RunOutcome
from storage.instrument_models import InstrumentRun
from storage.repo.instrument_runs import record_count, set_instrument_run_status
from storage.settings import Settings
from study.cluster.coordinator import ShardedPass, run_coordinated, under_shard_lease
from study.cluster.shards import ShardScope, shard_scopes
from tests.toy_instrument.items import SAMPLE, read_items
from tests.toy_instrument.store import INSTRUMENT, open_run, run_coin


@dataclass(frozen=True)
class CoinShardTask:
    """One shard of a coin run: its items."""

    settings: Settings
    run: str
    model: str
    samples: int
    items: Path
    scope: ShardScope[str]


def coin_shard(task: CoinShardTask) -> RunOutcome:
    """Run one shard's items (in a worker: own session under the shard's lease)."""
    return under_shard_lease(
        task.settings,
        task.scope.lease_key,
        f"{INSTRUMENT} run {task.run} (shard)",
        lambda session: run_coin(
            task.run, model=task.model, samples=task.samples, items=task.items,
            session=session, scope=task.scope.keys, finish=False,
        ),
    )  # fmt: skip


def run_coin_sharded(
    name: str,
    *,
    model: str,
    sharding: ShardedPass,
    samples: int = 8,
    items: Path = SAMPLE,
) -> RunOutcome:
    """Run the coin study ``name`` with its items cut into shards on ``sharding.executor``."""
    session = sharding.session
    parent = f"{INSTRUMENT}_run:{name}"
    run_id, total = open_run(name, model=model, samples=samples, session=session, items=items)
    before = record_count(run_id, session=session)
    ids = [it.id for it in read_items(items)]

    def tasks() -> list[CoinShardTask]:
        scopes = shard_scopes(ids, parent, per_shard=sharding.per_shard)
        return [CoinShardTask(sharding.settings, name, model, samples, items, s) for s in scopes]

    def after(parts: list[RunOutcome] | None) -> None:
        row = session.get(InstrumentRun, run_id)
        assert row is not None
        done = parts is not None and record_count(run_id, session=session) >= total
        set_instrument_run_status(row, "done" if done else "interrupted", session=session)

    run_coordinated(
        sharding, parent, f"{INSTRUMENT} run {name}", fn=coin_shard, tasks=tasks, total=total,
        done=lambda: record_count(run_id, session=session), after=after,
    )  # fmt: skip
    stored = record_count(run_id, session=session)
    return RunOutcome(run=name, stored=stored, added=stored - before, total=total)
