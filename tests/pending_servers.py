"""Servers that ``scripts/test.sh`` starts beside the suite instead of before it.

``scripts/test.sh`` runs a server script (``scripts/ci/vllm.sh``, ``scripts/ci/labelstudio.sh``)
in the background, names its output file in an environment variable (``DRIFTLENS_*_PENDING``)
and starts pytest at once; when the script ends, its exit status lands in ``<file>.rc``. The
first test that needs the server waits here, then sets the script's export line in this
process (the subprocesses a test starts inherit it). Tests that need no server never wait.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

#: How long a test waits for a server script still running (a clean machine installs
#: vLLM and converts Gemma, or installs Label Studio, first: several minutes).
PENDING_WAIT_S = 1800.0


class ServerScriptFailed(RuntimeError):
    """The background server script failed or did not finish in time (one sentence)."""


def await_pending(variable: str, *, script: str, wait_s: float = PENDING_WAIT_S) -> bool:
    """Wait for the server script named by ``variable`` and take its export line.

    Args:
        variable: the environment variable naming the script's output file
            (``DRIFTLENS_VLLM_PENDING``).
        script: the script's name, for the failure's sentence.
        wait_s: how long to wait for the exit status.

    Returns:
        Whether a pending script's export line was taken (``False``: nothing was pending,
        or it was taken before).

    Raises:
        ServerScriptFailed: the script exited non-zero or did not finish within ``wait_s``.
    """
    pending = os.environ.get(variable, "").strip()
    if not pending:
        return False
    status = Path(pending + ".rc")
    deadline = time.monotonic() + wait_s
    while not status.is_file():
        if time.monotonic() > deadline:
            raise ServerScriptFailed(f"{script} did not finish within {wait_s:.0f} s")
        time.sleep(1.0)
    rc = status.read_text(encoding="utf-8").strip()
    if rc != "0":
        raise ServerScriptFailed(
            f"{script} failed with exit status {rc} (its lines are in the log)"
        )
    for word in shlex.split(Path(pending).read_text(encoding="utf-8")):
        name, sep, value = word.partition("=")
        if sep and name.isidentifier():
            os.environ[name] = value
    # taken once per process: later fixtures read the variables directly
    del os.environ[variable]
    return True
