"""The Ray executor on a real local Ray cluster, PostgreSQL and two simulator servers.

Everything runs inside a network namespace holding only loopback (``unshare -n``, as
root): Ray binds every interface and looks up a routable address through an outside
resolver, which must not leave this machine. ``tests/cluster/ray_scenario.py`` does the
work and reports; this test checks the report. Skipped (with the reason) when not root,
without ``unshare`` or without Ray, unless ``DRIFTLENS_REQUIRE_RAY=1`` (scripts/test.sh),
where that is a failure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from tests.background import Background
from tests.cluster.ray_scenario import ray_missing

pytestmark = [pytest.mark.slow, pytest.mark.ray]

#: The scenario's time limit: 510 s measured on a loaded 2-core machine (load ~10).
SCENARIO_S = 780


@pytest.fixture(scope="module")
def ray_report(_ray_prestart: tuple[Path, Background] | None) -> dict[str, Any]:
    """The scenario's report: one Ray head, PostgreSQL and simulators for the module.

    The session started the scenario (``tests/conftest.py``) when it could run here;
    otherwise this says why (skip, or fail under CI).
    """
    reason = ray_missing()
    if reason is not None:
        if os.environ.get("DRIFTLENS_REQUIRE_RAY") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    assert _ray_prestart is not None, "ray_report is requested, so the scenario was started"
    out, run = _ray_prestart
    run.finish("the Ray scenario", timeout_s=SCENARIO_S)
    loaded: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    print("ray scenario timings (s since start):", loaded["timings"])  # shown with -s
    return loaded


def test_ray_run_killed_mid_shard_equals_the_single_process_run(ray_report: dict[str, Any]) -> None:
    kill, counts = ray_report["kill"], ray_report["counts"]
    gen = ray_report["ray"]["generate"]
    # one worker was killed while its shard was partly stored, and the shard was retried
    assert kill, "no shard was caught mid-way"
    assert 0 < kill["stored"] < kill["planned"]
    assert gen["status"] == "done" and gen["failed"] == 0
    assert gen["planned"] == ray_report["single"]["generate"]["planned"] == 360
    # nothing stored twice, nothing missing, every lease released
    assert counts["study_responses"] == 360
    assert counts["responses"] == counts["distinct_keys"]  # the conflicts run's too
    assert counts["leases_left"] == 0
    assert ray_report["ray"]["label"]["failed"] == 0
    # the bar: the same drift table and statistics, byte for byte (the Ray run's analysis
    # out of core, its model's statistics in a Ray task, against one process in memory)
    assert ray_report["ray"]["drift_csv"] == ray_report["single"]["drift_csv"]
    assert ray_report["ray"]["stats_json"] == ray_report["single"]["stats_json"]
    assert ray_report["ray"]["drift_csv"].count("\n") > 300


def test_ray_commands_report_their_progress_into_their_job_rows(ray_report: dict[str, Any]) -> None:
    """What the Jobs page shows of a Ray-executed command: every worker's stored units."""
    jobs = {(j["argv"] or ["?"])[0]: j for j in ray_report["jobs"] if "ray" in j["argv"]}
    gen = jobs["generate"]
    assert gen["state"] == "done" and gen["stage"] == "generating r"
    assert gen["done"] == gen["total"] == 360
    assert jobs["label"]["done"] == jobs["label"]["total"] == 360


def test_ray_instrument_runs_equal_the_single_process_runs(
    ray_report: dict[str, Any], cli: Callable[..., Result], tmp_path: Path
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
    clustered = ray_report["ray"]["instruments"]
    counts = ray_report["counts"]
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
