"""The drift simulator as a separate local server process that knows the catalog exactly.

Running the server in its own process matters for throughput: in the same process the
HTTP client and the server would share one interpreter lock. The server classifies each
memory line by exact lookup in the perturbation catalog, so every dose is the preset's
dose for the line's true class and category (the heuristic classifier is only the
fallback for lines not in the catalog).

Usage as a module (what :class:`SimProcess` runs)::

    SIM_API_KEY=... python -m study.sim_endpoint --port 8765 [--catalog FILE.yaml]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from driftlens_plugins import instruments, load_ref
from llm.sim.response import Classifier
from llm.sim.tasks import Answerer
from storage.errors import ServiceError
from study.catalog.document import CatalogDocument, load_default_catalog, read_catalog_file


@dataclass(frozen=True)
class ServerParts:
    """What instruments add to the served simulator (an instrument plugin's ``sim_server``).

    Attributes:
        answerers: known-truth answerers for the instrument's own requests.
        classify_memory: classifies a memory line into its catalog class and category (at
            most one instrument gives one).
    """

    answerers: tuple[Answerer, ...] = ()
    classify_memory: Classifier | None = None


def server_parts(catalog: CatalogDocument) -> ServerParts:
    """Every installed instrument's server parts, and the ontology studio's answerer.

    Raises:
        ConfigError: an instrument's ``sim_server`` does not load.
        ServiceError: two instruments each give a memory-line classifier.
    """
    from ontology.labelers.sim import studio_answerer

    # the ontology studio's labeling, rewrite and paraphrase requests, answered from the
    # known leaf of each simulated step (a perfect labeler)
    answerers: list[Answerer] = [studio_answerer()]
    classify: Classifier | None = None
    for plugin in instruments():
        if plugin.sim_server is None:
            continue
        parts: ServerParts = load_ref(plugin.sim_server)(catalog)
        answerers += parts.answerers
        if parts.classify_memory is not None:
            if classify is not None:
                raise ServiceError("Two instruments give the simulator a memory-line classifier.")
            classify = parts.classify_memory
    return ServerParts(tuple(answerers), classify)


class _PortTaken(Exception):
    """The simulator could not bind its port (someone took it after it was picked)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SimProcess:
    """``with SimProcess(api_key=K) as base_url:`` — the simulator in a child process."""

    def __init__(
        self,
        *,
        api_key: str,
        catalog: Path | None = None,
        timeout_s: float = 60,
        module: str = "study.sim_endpoint",
        args: tuple[str, ...] = (),
    ) -> None:
        self.api_key = api_key
        self.catalog = catalog
        self.timeout_s = timeout_s
        # another simulator entry point (e.g. study.disposition.sim_endpoint) and its options
        self.module = module
        self.args = args
        self.port = _free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of the OpenAI-compatible API."""
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> str:
        # The free port is only free when picked: another process may bind it before the
        # server does. A start that fails on a taken port is retried on a new one.
        for attempt in range(3):
            try:
                return self._start()
            except _PortTaken:
                if attempt == 2:
                    raise ServiceError(
                        "The local simulator server did not start: three free ports were "
                        "taken before it could bind them."
                    ) from None
                self.port = _free_port()
        raise AssertionError("unreachable")

    def _start(self) -> str:
        cmd = [sys.executable, "-m", self.module, "--port", str(self.port), *self.args]
        if self.catalog is not None:
            cmd += ["--catalog", str(self.catalog)]
        # The key travels in the environment, never on a command line others can read.
        env = dict(os.environ, SIM_API_KEY=self.api_key)
        self._proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + self.timeout_s
        request = urllib.request.Request(
            f"{self.url}/models", headers={"Authorization": f"Bearer {self.api_key}"}
        )
        while True:
            try:
                with urllib.request.urlopen(request, timeout=2) as reply:
                    if reply.status == 200:
                        return self.url
            except OSError:
                pass
            if self._proc.poll() is not None or time.monotonic() > deadline:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                self.__exit__(None, None, None)
                if "address already in use" in err.lower():
                    raise _PortTaken
                raise ServiceError(
                    "The local simulator server did not start"
                    + (f": {err.strip().splitlines()[-1]}" if err.strip() else ".")
                )
            time.sleep(0.2)

    def __exit__(self, *exc_info: object) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None


def main(argv: list[str] | None = None) -> None:
    """Serve the simulator with the catalog's exact classes (key from ``SIM_API_KEY``)."""
    from llm.sim.server import serve

    parser = argparse.ArgumentParser(description="DriftLens simulator with catalog classes")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--catalog", type=Path, default=None)
    args = parser.parse_args(argv)
    doc = read_catalog_file(args.catalog) if args.catalog else load_default_catalog()
    parts = server_parts(doc)
    serve("127.0.0.1", args.port, classify_memory=parts.classify_memory, answerers=parts.answerers)


if __name__ == "__main__":
    main()
