"""``--executor``, ``--address`` and ``--shard-questions``: where a command's shards run."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from app.cli.context import settings
from llm.specs import ModelSpec

if TYPE_CHECKING:
    from sqlmodel import Session

    from study.cluster.coordinator import ShardedPass
    from study.cluster.executors import Executor

T = TypeVar("T")

EXECUTOR_OPTION = typer.Option(
    None,
    "--executor",
    help="Run the work as shards: 'ray' (tasks on a Ray cluster; needs PostgreSQL and "
    "the [cluster] extra) or 'local' (shards one after another here). Default: one process.",
)
ADDRESS_OPTION = typer.Option(
    None,
    "--address",
    help="Ray cluster: auto (started with `ray start` on this machine, the default) or "
    "ray://HOST:PORT.",
)
SHARD_QUESTIONS_OPTION = typer.Option(
    25, "--shard-questions", min=1, help="Questions per shard with --executor."
)


def executor_for(
    ctx: typer.Context, name: str | None, address: str | None, *, model: ModelSpec | None = None
) -> Executor | None:
    """The executor asked for, or ``None`` for the single-process path.

    A ``vllm/...`` ``model`` runs an engine inside each task, so each task reserves a GPU.
    """
    if name is None:
        if address is not None:
            from storage.errors import ConfigError

            raise ConfigError("--address needs --executor ray.")
        return None
    from study.cluster.executors import make_executor

    gpus = 1.0 if model is not None and model.in_process_engine else 0.0
    return make_executor(name, settings=settings(ctx), address=address, gpus_per_task=gpus)


def sharded_pass(
    ctx: typer.Context,
    runner: Executor,
    *,
    session: Session,
    per_shard: int,
    progress: Callable[[int, int], None] | None = None,
    on_plan: Callable[[str], None] | None = None,
) -> ShardedPass:
    """What a sharded entry point runs on: ``runner``, with the command's workspace settings."""
    from study.cluster.coordinator import ShardedPass

    return ShardedPass(
        session=session,
        settings=settings(ctx),
        executor=runner,
        per_shard=per_shard,
        progress=progress,
        on_plan=on_plan,
    )


def here_or_sharded(
    ctx: typer.Context,
    runner: Executor | None,
    here: Callable[..., T],
    sharded: Callable[..., T],
    *args: Any,
    session: Session,
    per_shard: int,
    **kwargs: Any,
) -> T:
    """Run a command's work in this process, or cut into shards on ``runner``.

    Args:
        ctx: The command's context (its workspace settings go to the shards).
        runner: What :func:`executor_for` returned; ``None`` runs ``here``.
        here: The single-process function.
        sharded: Its sharded twin, taking the same arguments but ``session``,
            ``progress`` and ``on_plan``, which it takes in its ``sharding``.
        *args: Positional arguments of both.
        session: The command's session.
        per_shard: Items (questions, banks) a shard.
        **kwargs: Keyword arguments of both (``progress``, ``on_plan``, ...).
    """
    if runner is None:
        return here(*args, session=session, **kwargs)
    told = {k: kwargs.pop(k) for k in ("progress", "on_plan") if k in kwargs}
    sharding = sharded_pass(ctx, runner, session=session, per_shard=per_shard, **told)
    return sharded(*args, sharding=sharding, **kwargs)
