"""``driftlens judges robustness --instrument reasoning`` without ``--labeler``: the
response judge (helpfulness, distraction, acknowledgement) re-judges a sample.

Known dose: the simulated judge takes a helpfulness point off with probability 0.3 per
request, so its resamples (new seeds) flip some helpfulness verdicts of the stored ones;
a run nobody judged is refused in one line.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import Result

from study.reasoning.response_judge_robustness import MEASURE
from tests.cli_runner import cli_runner


def test_the_response_judge_is_rejudged_with_its_resamples_and_a_strict_judge(
    sim_run: str, cli: Callable[..., Result]
) -> None:
    judged = cli("judge", "--run", sim_run, "--model", "sim/null")
    assert judged.exit_code == 0, (judged.output, judged.exception)
    result = cli(
        "judges", "robustness", "--instrument", "reasoning", "--run", sim_run,
        "--resamples", "3", "--judge", "sim/judge-strict", "--sample", "40",
        "--bootstrap", "300", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, (result.output, result.exception)
    got = json.loads(result.stdout)
    assert got["primary"] == "sim/null" and got["alternatives"] == ["sim/judge-strict"]
    assert got["measure"] == MEASURE and got["resamples"] == 3
    # the baseline answers are their own stratum beside the memory classes
    assert "none" in got["strata"] and len(got["strata"]) >= 2
    assert got["n_items"] == sum(got["strata"].values()) >= 30
    assert 0 < got["resample_flip_rate"] < 1  # the judge's seeded helpfulness noise
    assert 0 <= got["judge_free"][0] <= got["mean"] <= got["judge_free"][1] <= 4


def test_a_run_no_response_judge_scored_is_refused_in_one_line(
    sim_run: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = cli_runner(capsys, monkeypatch)
    line = run(
        "judges", "robustness", "--instrument", "reasoning", "--run", sim_run,
        "--judge", "sim/judge-strict",
    ).one_line()  # fmt: skip
    assert line.startswith("error:") and "scored by 0 judges" in line, line
