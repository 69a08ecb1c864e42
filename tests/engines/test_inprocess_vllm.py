"""The in-process ``vllm/<path>`` backend on the tiny local model, from the vLLM virtualenv.

The CLI runs as a subprocess with the vLLM virtualenv's python (``scripts/ci/vllm.sh``
installs this project there; ``PYTHONPATH`` puts this checkout first, so the code under test
is what runs) in a session of its own. After it exits, no process of that session may remain:
vLLM's ``VLLM::EngineCore`` child and its workers must be gone, which only an explicit engine
shutdown guarantees. A command that hangs at exit fails on the subprocess timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.engines.conftest import VllmVenv

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = [
    {"id": "t1", "text": "Should you lend money to a friend?", "domains": ["relationship"]},
    {"id": "t2", "text": "Is it better to rent or to buy a home?", "domains": ["finance"]},
]


def _stat(pid: int) -> tuple[str, int] | None:
    """``(comm, session id)`` of a live process, or ``None``."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm is in parentheses and may hold spaces; the fields after it are plain.
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()
    return comm, int(fields[3])  # state, ppid, pgrp, session


def session_processes(sid: int) -> list[tuple[int, str]]:
    """Every live process (pid, name) in session ``sid`` (orphans keep their session)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            found = _stat(int(entry.name))
            if found is not None and found[1] == sid and _alive(int(entry.name)):
                out.append((int(entry.name), found[0]))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _env(workspace: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(REPO),
        DRIFTLENS_WORKSPACE=str(workspace),
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_CPU_OMP_THREADS_BIND=os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
        VLLM_NO_USAGE_STATS="1",
        HF_HUB_OFFLINE="1",
        TQDM_DISABLE="1",
    )
    env.pop("DRIFTLENS_VLLM_ENGINE_ARGS", None)
    return env


def _cli_args(venv: VllmVenv, run: str, *extra: str) -> list[str]:
    return [
        str(venv.python), "-c", "from app.cli import main; main()",
        "generate", "--model", f"vllm/{venv.tiny_model}", "--run", run,
        "--perturbations", "none", "--json", *extra,
    ]  # fmt: skip


def _import(cli, tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n", encoding="utf-8")
    assert cli("questions", "import", str(path)).exit_code == 0


def _wait_gone(sid: int, timeout_s: float = 10.0) -> list[tuple[int, str]]:
    """The session's processes still alive after a short grace (kernel reaping)."""
    deadline = time.monotonic() + timeout_s
    left = session_processes(sid)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = session_processes(sid)
    return left


def _kill_session(sid: int) -> None:
    for pid, _ in session_processes(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_inprocess_generate_on_the_tiny_model_leaves_no_process(
    vllm_venv: VllmVenv, cli, workspace: Path, tmp_path: Path
) -> None:
    _import(cli, tmp_path)
    args = _cli_args(
        vllm_venv, "tiny", "--samples", "2", "--max-tokens", "8",
        "--engine-arg", "max_model_len=1024", "--engine-arg", "dtype=float32",
    )  # fmt: skip
    proc = subprocess.Popen(
        args, env=_env(workspace), cwd=tmp_path, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=420)
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid)
        pytest.fail("the CLI did not exit within 420 s (engine not shut down?)")
    assert proc.returncode == 0, err[-3000:]
    summary = json.loads(out)
    assert (summary["planned"], summary["succeeded"], summary["failed"]) == (4, 4, 0)
    assert "[shutdown] MPClient: complete" in err  # our explicit shutdown ran
    assert _wait_gone(proc.pid) == [], "processes left behind after the CLI exited"
    # The same command again answers from what is stored (no engine needed to resume).
    again = subprocess.run(
        args, env=_env(workspace), cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0 and json.loads(again.stdout)["requested"] == 0


def test_a_dead_engine_ends_the_run_with_one_line_and_no_orphan(
    vllm_venv: VllmVenv, cli, workspace: Path, tmp_path: Path
) -> None:
    _import(cli, tmp_path)
    # Enough work that the engine is still generating when it is killed.
    args = _cli_args(
        vllm_venv, "dies", "--samples", "24", "--max-tokens", "1500",
        "--engine-arg", "max_model_len=2048", "--engine-arg", "dtype=float32",
    )  # fmt: skip
    proc = subprocess.Popen(
        args, env=_env(workspace), cwd=tmp_path, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    ready = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "init engine" in line:
                ready.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert ready.wait(timeout=360), "".join(lines)[-3000:]
        # By default 2 s after the engine core said it is ready: under load the engine is
        # then still starting, otherwise generating. Both must end the run the same way;
        # DRIFTLENS_TEST_KILL_DELAY_S picks another moment (0 = at once, 8 = generating).
        time.sleep(float(os.environ.get("DRIFTLENS_TEST_KILL_DELAY_S", "2")))
        cores = [pid for pid, name in session_processes(proc.pid) if "EngineCor" in name]
        assert cores, session_processes(proc.pid)
        for pid in cores:
            os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=180)
    except BaseException:
        _kill_session(proc.pid)
        raise
    reader.join(timeout=10)
    assert proc.returncode == 3, "".join(lines)[-3000:]
    ours = [line for line in lines if line.startswith("error:")]
    assert len(ours) == 1 and "vLLM engine" in ours[0] and "died" in ours[0], ours
    assert _wait_gone(proc.pid) == [], "processes left behind after the engine died"
