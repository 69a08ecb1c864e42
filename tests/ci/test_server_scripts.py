"""scripts/ci: two checkouts on one machine share the caches, not the servers (issue 23 item 14).

Shell-level, on copies of the scripts in temporary "checkouts" (no server is started: one
is running on a shared machine for everyone, and a second vLLM would not fit):

* two cache builds of a cheap step started at once under ``lock_cache`` run one after the
  other, and the second reuses what the first built (without the lock both built, as two
  checkouts converting Gemma into one cache folder did);
* each checkout has its own state folder, so one checkout's ``--stop`` never reads, let
  alone stops, the servers another checkout started.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CI = REPO / "scripts" / "ci"

pytestmark = pytest.mark.skipif(shutil.which("flock") is None, reason="flock(1) not installed")


def _checkout(root: Path) -> Path:
    """A copy of scripts/ci as another checkout at ``root`` would have it."""
    dest = root / "scripts" / "ci"
    shutil.copytree(CI, dest)
    return dest


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_two_cache_builds_at_once_run_one_after_the_other(tmp_path: Path) -> None:
    cache, log = tmp_path / "cache" / "thing-1.0", tmp_path / "log"
    # the cheap step: build the cache unless it is there; "start"/"end" must not interleave
    step = f"""
        set -euo pipefail
        . {CI / "common.sh"}
        lock_cache {cache}
        if [ ! -f {cache}/built ]; then
          echo "start $1" >>{log}; sleep 1; mkdir -p {cache}; touch {cache}/built
          echo "end $1" >>{log}
        else
          echo "reuse $1" >>{log}
        fi
        unlock_cache
    """
    first = subprocess.Popen(["bash", "-c", step, "step", "a"], stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(["bash", "-c", step, "step", "b"], stderr=subprocess.PIPE, text=True)
    assert first.wait(timeout=60) == 0 and second.wait(timeout=60) == 0
    lines = log.read_text().split("\n")[:-1]
    kinds = [ln.split()[0] for ln in lines]
    assert kinds == ["start", "end", "reuse"], lines  # one build, the other waited for it
    assert lines[0].split()[1] == lines[1].split()[1] != lines[2].split()[1]
    assert (cache.parent / "thing-1.0.lock").exists()


def test_each_checkout_has_its_own_state_folder(tmp_path: Path) -> None:
    a, b = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    probe = ". scripts/ci/common.sh; for n in pg ls vllm; do checkout_state_dir $n; done"
    dirs_a = _bash(probe, a.parents[1]).stdout.split()
    dirs_b = _bash(probe, b.parents[1]).stdout.split()
    assert len(dirs_a) == len(dirs_b) == 3 and not set(dirs_a) & set(dirs_b)
    assert dirs_a == _bash(probe, a.parents[1]).stdout.split()  # stable for one checkout
    assert all(d.startswith("/tmp/driftlens-") for d in dirs_a)
    # each server script takes its default from it (and the override wins)
    for script, name, env in (("postgres.sh", "pg", "DRIFTLENS_PG_STATE"),
                              ("labelstudio.sh", "ls", "DRIFTLENS_LS_STATE"),
                              ("vllm.sh", "vllm", "DRIFTLENS_VLLM_STATE")):  # fmt: skip
        text = (a / script).read_text()
        assert f'STATE_DIR="${{{env}:-$(checkout_state_dir {name})}}"' in text


def _state_dir(checkout: Path, name: str) -> Path:
    got = _bash(f". scripts/ci/common.sh; checkout_state_dir {name}", checkout.parents[1])
    return Path(got.stdout.strip())


def test_one_checkouts_stop_leaves_anothers_servers_alone(tmp_path: Path) -> None:
    a, b = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    state_a, state_b = _state_dir(a, "pg"), _state_dir(b, "pg")
    try:
        # checkout a "runs" a server: its state file (stop would read it and stop that one)
        state_a.mkdir(parents=True)
        (state_a / "env").write_text("PG_ROOT=/nonexistent\nPG_PORT=1\n", encoding="utf-8")
        res = _bash("scripts/ci/postgres.sh --stop", b.parents[1])
        assert res.returncode == 0, res.stderr
        assert "nothing to stop" in res.stderr
        assert (state_a / "env").exists()  # checkout b never looked at checkout a's state
    finally:
        shutil.rmtree(state_a, ignore_errors=True)
        for state in (state_a, state_b):
            Path(f"{state}.lock").unlink(missing_ok=True)
