"""Structured outputs in process (issue 36): ``vllm/<path>`` passes each format to vLLM.

The in-process backend (what the Ray executor's actor runs) maps a request's format to
vLLM's offline ``StructuredOutputsParams`` (``llm.vllm_backend.vllm_structured_kwargs``).
On the tiny model (random weights: it follows no prompt) every kind's answer parses with
structured outputs on; with them off the same requests are measured too, so the test sees
the constraint at work. Runs ``bench/structured_rates.py`` with the vLLM virtualenv's python.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engines.conftest import VllmVenv

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]


def test_every_kind_parses_in_process_on_the_tiny_model(vllm_venv: VllmVenv) -> None:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(REPO),
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_CPU_OMP_THREADS_BIND=os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
        VLLM_NO_USAGE_STATS="1",
        HF_HUB_OFFLINE="1",
        TQDM_DISABLE="1",
        DRIFTLENS_VLLM_ENGINE_ARGS='{"max_model_len": 2048}',
    )
    cmd = [
        str(vllm_venv.python), str(REPO / "bench" / "structured_rates.py"),
        "--model", f"vllm/{vllm_venv.tiny_model}", "--repeats", "1",
        "--skip", "step labels",  # its prompt is longer than the tiny model's context
    ]  # fmt: skip
    done = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=900, start_new_session=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stdout, file=sys.stderr)
    rows = [ln for ln in done.stdout.splitlines() if ln.startswith("| ") and "/1 |" in ln]
    assert len(rows) == 8, done.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == "1/1", row  # structured on: the instrument's parser reads it
    on = next(ln for ln in done.stdout.splitlines() if ln.startswith("on: "))
    off = next(ln for ln in done.stdout.splitlines() if ln.startswith("off: "))
    assert on.startswith("on: 8/8 parsed"), on
    assert not off.startswith("off: 8/8"), off  # the dose: without the constraint it fails
