"""Executors: who runs a command's shards (this process, or Ray tasks on a cluster).

An executor maps a module-level function over task payloads (frozen dataclasses) and
returns the results in payload order. While it waits it calls ``poll`` about once a
second, which is where the coordinator reads aggregated progress from the database and
renews its lease.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from storage.errors import ConfigError
from storage.settings import Settings

P = TypeVar("P")
R = TypeVar("R")

#: ``--executor`` values.
EXECUTORS: tuple[str, ...] = ("local", "ray")


class Executor(Protocol):
    """Runs ``fn`` on every payload; results in payload order."""

    @property
    def name(self) -> str:
        """``local`` or ``ray``."""
        ...

    def map(
        self, fn: Callable[[P], R], payloads: Sequence[P], *, poll: Callable[[], None]
    ) -> list[R]:
        """Run ``fn(payload)`` for each payload, calling ``poll`` while waiting."""
        ...


@dataclass(frozen=True)
class LocalExecutor:
    """The shards one after another in this process (the reference for the Ray executor)."""

    name: str = "local"

    def map(
        self, fn: Callable[[P], R], payloads: Sequence[P], *, poll: Callable[[], None]
    ) -> list[R]:
        out = []
        for payload in payloads:
            out.append(fn(payload))
            poll()
        return out


def make_executor(
    name: str, *, settings: Settings, address: str | None = None, gpus_per_task: float = 0.0
) -> Executor:
    """The executor called ``name`` for work on ``settings``' database.

    ``gpus_per_task``: GPUs each Ray task reserves (1 when every task starts its own
    in-process vLLM engine).

    Raises:
        ConfigError: Unknown executor, an address without Ray, or Ray on SQLite (its
            tasks run in other processes, possibly other machines, which one SQLite file
            cannot serve).
    """
    if name not in EXECUTORS:
        raise ConfigError(f"Unknown executor {name!r}: use {' or '.join(EXECUTORS)}.")
    if name == "local":
        if address is not None:
            raise ConfigError("--address needs --executor ray.")
        return LocalExecutor()
    from study.cluster.ray_address import parse_ray_address

    parse_ray_address(address)
    if settings.is_sqlite:
        raise ConfigError(
            "--executor ray needs a database server every worker can reach "
            "(DRIFTLENS_DB_URL=postgresql+psycopg://...); this workspace uses SQLite."
        )
    from study.cluster.ray_executor import RayExecutor

    return RayExecutor(address=address or "auto", num_gpus=gpus_per_task)
