"""The Ray executor: shards as Ray tasks (the only module that imports ``ray``).

``ray`` comes with the optional extra ``.[cluster]`` and is imported when a command asks
for ``--executor ray``. A task whose worker process dies (killed, out of memory, node
lost) is retried by Ray up to ``max_retries`` times; the shard's lease and the idempotent
upserts make the retry store only what the dead attempt had not committed. An exception
raised by the task itself is not retried: it is the command's error, re-raised here.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from storage.errors import ConfigError, DriftLensError, ServiceError

P = TypeVar("P")
R = TypeVar("R")

#: How often the coordinator wakes up while tasks run (progress, lease heartbeat).
POLL_S = 1.0


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            "--executor ray needs Ray: pip install 'driftlens-workbench[cluster]'."
        ) from exc
    return ray


@dataclass(frozen=True)
class RayExecutor:
    """Runs each payload as one Ray task on the cluster at ``address``.

    Args:
        address: ``auto`` (the cluster started on this machine with ``ray start``) or
            ``ray://HOST:PORT`` (a remote cluster's client server).
        max_retries: Retries of a task whose worker died.
        num_cpus: CPUs a task reserves (a task mostly waits on endpoints and the database).
        num_gpus: GPUs a task reserves: 1 for an in-process vLLM engine (``vllm/...``
            models), so Ray places one such task per GPU.
    """

    address: str = "auto"
    max_retries: int = 3
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    name: str = "ray"

    def map(
        self, fn: Callable[[P], R], payloads: Sequence[P], *, poll: Callable[[], None]
    ) -> list[R]:
        ray = _ray()
        # Ray's driver threads print the cluster's notices (a worker died, a task is
        # retried) to stdout, where a command's --json output goes: they go to stderr, and
        # the connection is closed before the command prints its result.
        with contextlib.redirect_stdout(sys.stderr):
            started = not ray.is_initialized()
            try:
                return self._map(ray, fn, payloads, poll=poll)
            finally:
                if started:
                    ray.shutdown()

    def _map(
        self, ray: Any, fn: Callable[[P], R], payloads: Sequence[P], *, poll: Callable[[], None]
    ) -> list[R]:
        if not ray.is_initialized():
            from study.cluster.ray_address import check_reachable, parse_ray_address

            host_port = parse_ray_address(self.address)
            if host_port is not None:
                check_reachable(*host_port, address=self.address)
            try:
                ray.init(
                    address=self.address,
                    log_to_driver=False,
                    configure_logging=False,
                    include_dashboard=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(
                    f"No Ray cluster at {self.address!r} ({str(exc).splitlines()[0]}); "
                    "start one with `ray start --head --node-ip-address 127.0.0.1` "
                    "or pass --address ray://HOST:PORT."
                ) from exc
        task = ray.remote(
            max_retries=self.max_retries,
            retry_exceptions=False,
            num_cpus=self.num_cpus,
            num_gpus=self.num_gpus,
        )(fn)
        refs = [task.remote(p) for p in payloads]
        pending = list(refs)
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=POLL_S)
            poll()
        try:
            return list(ray.get(refs))
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, DriftLensError):
                raise cause from None
            raise ServiceError(f"A Ray task failed: {str(cause or exc).splitlines()[0]}") from exc
        except ray.exceptions.RayError as exc:
            raise ServiceError(
                f"A Ray task was lost after {self.max_retries} retries "
                f"({type(exc).__name__}); run the same command again to resume."
            ) from exc
