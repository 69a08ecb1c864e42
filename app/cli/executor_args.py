"""``--executor``, ``--address`` and ``--shard-questions``: where a command's shards run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from app.cli.context import settings

if TYPE_CHECKING:
    from study.cluster.executors import Executor

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
    ctx: typer.Context, name: str | None, address: str | None, *, model: str | None = None
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

    gpus = 1.0 if model is not None and model.startswith("vllm/") else 0.0
    return make_executor(name, settings=settings(ctx), address=address, gpus_per_task=gpus)
