"""A throw-away local stack on 127.0.0.1: PostgreSQL, simulator servers, a Ray head.

What the cluster tests and ``bench/cluster.py`` run against, and what docs/cluster.md's
"Ray on a laptop" starts by hand. Meant to run inside a network namespace holding only
loopback (``unshare -n``), since Ray binds every interface. Everything started here is
stopped by :meth:`LocalStack.close` (PostgreSQL through ``scripts/ci/postgres.sh`` with
this stack's own state folder; the simulators; ``ray stop``), never anything else.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 120.0) -> None:
    """Wait until something accepts connections on 127.0.0.1:``port``.

    A CLI process starting on a loaded machine took over 30 s to listen (seen on the
    shared 2-core machine), so the default wait is generous.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


class LocalStack:
    """``with LocalStack() as stack``: start the parts on demand, stop them all at exit."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="dlray-"))
        self.env = dict(os.environ)
        self._pg_env = dict(self.env, DRIFTLENS_PG_STATE=str(self.tmp / "pgstate"))
        self._procs: list[subprocess.Popen[bytes]] = []
        self._ray = False

    def postgres(self, db: str = "driftlens") -> str:
        """Start a PostgreSQL server of this stack's own; the URL of database ``db``."""
        line = subprocess.run(
            ["bash", str(ROOT / "scripts/ci/postgres.sh")],
            env=dict(self._pg_env, DRIFTLENS_PG_DB=db),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return line.split("=", 1)[1]

    def database(self, url: str, name: str) -> str:
        """Create database ``name`` on ``url``'s server; its URL."""
        from sqlalchemy import create_engine, text

        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            admin.dispose()
        return url.rsplit("/", 1)[0] + "/" + name

    def simulators(self, n: int, *, delay_ms: float) -> str:
        """Start ``n`` simulator servers; their URLs as one ``SIM_BASE_URL`` value."""
        ports = [free_port() for _ in range(n)]
        serve = [str(BIN / "driftlens"), "sim", "serve", "--delay-ms", str(delay_ms)]
        for port in ports:
            self._procs.append(
                subprocess.Popen(
                    [*serve, "--port", str(port)],
                    env=self.env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for port in ports:
            wait_port(port)
        return ",".join(f"http://127.0.0.1:{p}/v1" for p in ports)

    def ray_head(self, *, cpus: int, env: dict[str, str]) -> None:
        """Start a Ray head with ``cpus`` worker CPUs; its workers inherit ``env``."""
        self.ray_stop()
        args = [str(BIN / "ray"), "start", "--head", "--node-ip-address", "127.0.0.1"]
        args += ["--num-cpus", str(cpus), "--disable-usage-stats", "--include-dashboard"]
        args += ["false", "--port", str(free_port()), "--temp-dir", str(self.tmp / "r")]
        subprocess.run(args, env=self.ray_env(env), check=True, capture_output=True)
        self._ray = True

    def ray_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` plus what a driver needs to find this stack's head."""
        return dict(env, RAY_TMPDIR=str(self.tmp / "r"), RAY_ADDRESS="auto")

    def ray_stop(self) -> None:
        """Stop this stack's Ray head and workers, if started."""
        if self._ray:
            subprocess.run(
                [str(BIN / "ray"), "stop", "--force"],
                env=self.ray_env(self.env),
                capture_output=True,
                timeout=120,
            )
            self._ray = False

    def close(self) -> None:
        """Stop everything this stack started."""
        with contextlib.suppress(Exception):
            self.ray_stop()
        for p in self._procs:
            p.terminate()
        for p in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)
        subprocess.run(
            ["bash", str(ROOT / "scripts/ci/postgres.sh"), "--stop"],
            env=self._pg_env,
            capture_output=True,
        )
        shutil.rmtree(self.tmp, ignore_errors=True)  # Ray's session logs, workspaces

    def __enter__(self) -> LocalStack:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
