"""The bar of judge robustness on memory conflicts, through the CLI.

A conflicts run judged by ``sim/judge-lenient``, then ``judges robustness`` with
``sim/judge-strict`` as the alternative: the report names the flip rate and both intervals,
and the judge-inclusive interval is at least as wide as the judge-free one. Before the
robustness run the report's section says "not assessed".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from sqlmodel import Session
from typer.testing import Result

from study.judge_robustness.result import stored_robustness
from tests.judge_robustness.cli_steps import judged_conflicts_run, strict_robustness


def test_lenient_run_checked_against_strict_judge(
    cli: Callable[..., Result], session: Session, tmp_path: Path
) -> None:
    judged = judged_conflicts_run(cli, "rb")
    assert "ignores seed" not in judged.output  # the simulated judge honours its seed
    before = tmp_path / "before"
    assert cli("conflicts", "report", "--run", "rb", "--out", str(before)).exit_code == 0
    assert (
        "Not assessed: the judge was not re-judged"
        in (before / "conflicts_report.html").read_text()
    )

    data = strict_robustness(cli, "conflicts", "rb", sample=30, bootstrap=400)
    assert data["primary"] == "sim/judge-lenient"
    assert set(data["strata"]) == {"CPC", "BOC", "SCC"} and data["n_items"] >= 25
    free, both = data["judge_free"], data["judge_inclusive"]
    assert both[1] - both[0] >= free[1] - free[0]
    # the simulated judges' mixture noise flips many single scores; strict differs more
    alt = data["lines"][-1]
    assert 0.2 < data["resample_flip_rate"] < 0.9 and alt["flip_rate"] > 0.2
    assert alt["mean"] < data["lines"][0]["mean"]  # strict scores D2/D4 lower

    after = tmp_path / "after"
    assert cli("conflicts", "report", "--run", "rb", "--out", str(after)).exit_code == 0
    text = re.sub(r"\s+", " ", (after / "conflicts_report.html").read_text())
    assert "Not assessed: the judge was not re-judged" not in text
    assert "Verdict flip rate of the same judge" in text
    assert "judge-free 95% interval" in text and "judge-inclusive" in text
    assert "Alternative judge sim/judge-strict: flip rate" in text
    from tests.app.apptest_support import open_page

    page = open_page("conflicts.py")
    shown = " ".join(t.value for t in page.text)
    assert "Verdict flip rate of the same judge" in shown and "judge-inclusive" in shown
    kept = stored_robustness("conflicts", "rb", session=session)
    assert kept is not None and kept.judge_inclusive == tuple(both)


def test_unknown_instrument_is_a_user_error(cli: Callable[..., Result]) -> None:
    from storage.errors import DriftLensError

    bad = cli("judges", "robustness", "--instrument", "nope", "--run", "x", "--judge", "sim/a")
    # a DriftLensError: app.cli.main prints it as one line, no traceback
    assert bad.exit_code != 0 and isinstance(bad.exception, DriftLensError)
    assert "covers reasoning, conflicts, disposition so far" in str(bad.exception)
