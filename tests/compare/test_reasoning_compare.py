"""Reasoning drift in ``driftlens compare``: d_rel differences of labeled simulated runs.

Runs are written with known per-class doses (tests/analysis/_sim_workspace.py): two runs of
one dose with different seeds (the second on a subset of the questions: the unmatched
questions must be named) and one with the doses doubled.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from study.compare import CompareOptions, compare_runs, matching_lines
from tests.analysis._sim_workspace import build_sim_workspace


@pytest.fixture(scope="module")
def reasoning_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workspace for the module (writing the runs is the slow part)."""
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    ws = tmp_path_factory.mktemp("reasoning-compare")
    with open_workspace_session(resolve_settings(workspace=ws)) as session:
        for name, seed, scale, n in (("a", 1, 1.0, 18), ("b", 2, 1.0, 14), ("c", 3, 2.0, 18)):
            build_sim_workspace(session, n_questions=n, seed=seed, run_name=name,
                                model=f"sim/test-{name}", dose_scale=scale)  # fmt: skip
    return ws


@pytest.fixture
def runs(reasoning_ws: Path) -> Iterator[Session]:
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings(workspace=reasoning_ws)) as session:
        yield session


def _rows(c: Any, run_b: str, statistic: str = "d_rel (sri)") -> dict[str, Any]:
    return {r.scope: r for r in c.rows if r.run_b == run_b and r.statistic == statistic}


def test_a_larger_dose_is_different_and_another_seed_is_not(runs: Session) -> None:
    opts = CompareOptions(labeler="keywords", n_boot=1000, seed=3)
    c = compare_runs(["a", "c"], instrument="reasoning", session=runs, options=opts)
    rows = _rows(c, "c")
    for klass in ("class attribute", "class life_event"):
        assert rows[klass].diff > 0 and rows[klass].verdict == "different", rows[klass]
    assert "class noise" not in rows and "noise/whitespace" in rows
    assert rows["class life_event"].n_items == 18
    assert c.simulated
    same = compare_runs(["a", "b"], instrument="reasoning", session=runs, options=opts)
    assert all(r.verdict != "different" for r in same.rows), [
        (r.scope, r.p_adjusted) for r in same.rows if r.verdict == "different"
    ]
    # the most different questions carry both runs' steps with their leaves
    top = c.items[0]
    assert top.text_a.startswith("[") and "1. [" in top.text_a and "1. [" in top.text_b


def test_unshared_questions_are_counted_and_named(runs: Session) -> None:
    opts = CompareOptions(labeler="keywords", n_boot=300)
    c = compare_runs(["a", "b"], instrument="reasoning", session=runs, options=opts)
    m = c.matchings[0]
    assert (m.shared, m.only_a, m.only_b) == (14, tuple(f"q{i:03d}" for i in range(14, 18)), ())
    assert all(r.n_items <= 14 for r in c.rows)
    assert "4 only in a (q014, q015, q016, q017)" in matching_lines(c)[0]


def test_cli_json_and_bad_labeler(
    reasoning_ws: Path, cli: Callable[..., Any], tmp_path: Path
) -> None:
    out = tmp_path / "c.json"
    ws = ("--workspace", str(reasoning_ws))
    res = cli(*ws, "compare", "a", "b", "c", "-l", "keywords", "-B", "300", "--json", str(out))
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert {r["run"] for r in data["ranking"]} == {"a", "b", "c"}
    assert data["margin_note"].startswith("TOST at each comparison's own MDD")
    res = cli(*ws, "compare", "a", "b", "--labeler", "nobody-labeled-with-this")
    assert res.exit_code != 0
