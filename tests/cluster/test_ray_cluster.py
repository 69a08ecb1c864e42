"""The Ray executor on a real local Ray cluster, PostgreSQL and two simulator servers.

Everything runs inside a network namespace holding only loopback (``unshare -n``, as
root): Ray binds every interface and looks up a routable address through an outside
resolver, which must not leave this machine. ``tests/cluster/ray_scenario.py`` does the
work and reports; this test checks the report. Skipped (with the reason) when not root,
without ``unshare`` or without Ray, unless ``DRIFTLENS_REQUIRE_RAY=1`` (scripts/test.sh),
where that is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

SCENARIO = Path(__file__).with_name("ray_scenario.py")

#: A shell in a new network namespace with loopback up, running its arguments.
NETNS = ("unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$1" "$2"')

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "the Ray tests need root (a loopback-only network namespace: unshare -n)"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "the Ray tests need unshare and ip (util-linux, iproute2)"
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed: scripts/setup.sh dev,cluster"
    return None


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The scenario's report: one Ray head, PostgreSQL and simulators for the module."""
    reason = _missing()
    if reason is not None:
        if os.environ.get("DRIFTLENS_REQUIRE_RAY") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("ray") / "report.json"
    done = subprocess.run(
        [*NETNS, sys.executable, str(SCENARIO), str(out)],
        capture_output=True,
        text=True,
        timeout=780,  # 510 s measured on a loaded 2-core machine (load ~10)
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    loaded: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    print("ray scenario timings (s since start):", loaded["timings"])  # shown with -s
    return loaded


def test_ray_run_killed_mid_shard_equals_the_single_process_run(report: dict[str, Any]) -> None:
    kill, counts = report["kill"], report["counts"]
    gen = report["ray"]["generate"]
    # one worker was killed while its shard was partly stored, and the shard was retried
    assert kill, "no shard was caught mid-way"
    assert 0 < kill["stored"] < kill["planned"]
    assert gen["status"] == "done" and gen["failed"] == 0
    assert gen["planned"] == report["single"]["generate"]["planned"] == 360
    # nothing stored twice, nothing missing, every lease released
    assert counts["study_responses"] == 360
    assert counts["responses"] == counts["distinct_keys"]  # the conflicts run's too
    assert counts["leases_left"] == 0
    assert report["ray"]["label"]["failed"] == 0
    # the bar: the same drift table and statistics, byte for byte (the Ray run's analysis
    # out of core, its model's statistics in a Ray task, against one process in memory)
    assert report["ray"]["drift_csv"] == report["single"]["drift_csv"]
    assert report["ray"]["stats_json"] == report["single"]["stats_json"]
    assert report["ray"]["drift_csv"].count("\n") > 300


def test_ray_commands_report_their_progress_into_their_job_rows(report: dict[str, Any]) -> None:
    """What the Jobs page shows of a Ray-executed command: every worker's stored units."""
    jobs = {(j["argv"] or ["?"])[0]: j for j in report["jobs"] if "ray" in j["argv"]}
    gen = jobs["generate"]
    assert gen["state"] == "done" and gen["stage"] == "generating r"
    assert gen["done"] == gen["total"] == 360
    assert jobs["label"]["done"] == jobs["label"]["total"] == 360


def test_ray_instrument_runs_equal_the_single_process_runs(
    report: dict[str, Any], cli: Callable[..., Result], tmp_path: Path
) -> None:
    """conflicts generate/judge, sources run and disposition run with --executor ray, against
    one process (here, on the test's SQLite workspace: the results do not depend on the
    database)."""
    from tests.cluster.ray_scenario import instruments

    def run(*args: str) -> str:
        done = cli(*args)
        assert done.exit_code == 0, done.output
        return done.output

    single = instruments(run, tmp_path)
    clustered = report["ray"]["instruments"]
    counts = report["counts"]
    # every file of each instrument's report, byte for byte
    assert clustered["files"] == single["files"]
    assert {"conflicts/conflict_scores.csv", "sources/probes.csv"} <= set(single["files"])
    assert {"disposition/rates_on.csv", "disposition/awareness.json"} <= set(single["files"])
    assert "2 arms x 18 probes x 2 samples" in clustered["made"]["disposition"]
    assert " scored twice." in clustered["made"]["disposition"]
    assert single["files"]["sources/probes.csv"].count("\n") > 40
    assert ", 0 failed; status done" in clustered["made"]["conflicts"]
    assert "(done)" in clustered["made"]["sources"]
    assert counts["probes"] == counts["distinct_probes"] > 40
    assert counts["scores"] == counts["distinct_scores"] > 100
    assert counts["leases_left"] == 0
