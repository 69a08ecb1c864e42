"""``driftlens stats`` through the Typer app: good tables and every kind of bad table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.cli_invoke import invoke_cli
from tests.stats.sim import CONDITION_KEYS, simulate_table


@pytest.fixture
def good_csv(tmp_path: Path) -> Path:
    df, _ = simulate_table(
        np.random.default_rng(0),
        n_questions=30,
        attributes={"rich": 0.5},
        life_events={"divorce": 1.5},
        n_noise=2,
        samples=2,
    )
    path = tmp_path / "drift.csv"
    df.to_csv(path, index=False)
    return path


def _run(*args: str) -> tuple[int, str]:
    result = invoke_cli(["stats", *args])
    return result.exit_code, result.output


def test_good_table_writes_schema(good_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "stats.json"
    code, output = _run(str(good_csv), "--json", str(out), "--bootstrap", "500", "--seed", "1")
    assert code == 0, output
    assert "d_rel" in output and "divorce" in output
    data = json.loads(out.read_text())
    model = data["models"]["model"]
    assert set(model["metrics"]) == {"dtw", "sri"}
    cond = model["metrics"]["dtw"]["conditions"]["divorce"]
    for key in CONDITION_KEYS:
        assert key in cond
    assert data["meta"]["bootstrap"] == 500 and data["meta"]["seed"] == 1
    again = tmp_path / "again.json"
    _run(str(good_csv), "--json", str(again), "--bootstrap", "500", "--seed", "1")
    assert json.loads(again.read_text()) == data


def test_metrics_option(good_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    code, output = _run(str(good_csv), "--json", str(out), "-B", "200", "--metrics", "sri")
    assert code == 0, output
    assert set(json.loads(out.read_text())["models"]["model"]["metrics"]) == {"sri"}


def _write(tmp_path: Path, df: pd.DataFrame) -> Path:
    path = tmp_path / "bad.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda df: df.drop(columns=["condition_class"]), "condition_class"),
        (lambda df: df[df["condition_class"] != "noise"], "noise"),
        (lambda df: df.assign(dtw=df["dtw"].where(df.index != 3)), "NaN"),
        (lambda df: df.assign(condition_class="persona"), "persona"),
        (lambda df: df.drop(columns=["dtw", "sri"]), "metric"),
        (lambda df: df.assign(dtw="high"), "numeric"),
        (lambda df: df.iloc[:0], "no rows"),
    ],
)
def test_bad_tables_give_one_clear_line(
    good_csv: Path,
    tmp_path: Path,
    mutate,
    needle: str,
) -> None:
    df = pd.read_csv(good_csv)
    code, output = _run(str(_write(tmp_path, mutate(df))), "-B", "200")
    assert code != 0
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    assert needle.lower() in lines[0].lower()


def test_metric_named_dtw_but_text(good_csv: Path, tmp_path: Path) -> None:
    df = pd.read_csv(good_csv)
    code, output = _run(str(_write(tmp_path, df)), "-B", "200", "--metrics", "dtw,nope")
    assert code != 0 and "nope" in output and "Traceback" not in output


def test_missing_and_empty_files(tmp_path: Path) -> None:
    code, output = _run(str(tmp_path / "absent.csv"))
    assert code != 0 and "not found" in output.lower() and "Traceback" not in output
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, output = _run(str(empty))
    assert code != 0 and "empty" in output.lower() and len(output.strip().splitlines()) == 1


def test_condition_with_one_question_is_flagged_not_fatal(good_csv: Path, tmp_path: Path) -> None:
    df = pd.read_csv(good_csv)
    extra = df.iloc[[0]].assign(condition="solo", condition_class="attribute")
    out = tmp_path / "solo.json"
    code, output = _run(
        str(_write(tmp_path, pd.concat([df, extra]))), "-B", "200", "--json", str(out)
    )
    assert code == 0, output
    solo = json.loads(out.read_text())["models"]["model"]["metrics"]["dtw"]["conditions"]["solo"]
    assert solo["ci_low"] is None and solo["flags"]


@pytest.mark.parametrize(
    ("rows", "flag"),
    [
        (  # one question only
            [
                ("q1", "noise", "noise", 0.1),
                ("q1", "noise", "noise", 0.2),
                ("q1", "a", "attribute", 0.5),
            ],
            "fewer than two questions",
        ),
        (  # a noise floor without spread
            [
                ("q1", "noise", "noise", 0.1),
                ("q2", "noise", "noise", 0.1),
                ("q1", "a", "attribute", 0.5),
                ("q2", "a", "attribute", 0.4),
            ],
            "no spread",
        ),
    ],
)
def test_degenerate_tables_are_flagged(
    tmp_path: Path, rows: list[tuple[str, str, str, float]], flag: str
) -> None:
    path = tmp_path / "tiny.csv"
    pd.DataFrame(rows, columns=["question_id", "condition", "condition_class", "dtw"]).to_csv(
        path, index=False
    )
    out = tmp_path / "tiny.json"
    result = invoke_cli(["stats", str(path), "-B", "200", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert flag in result.output
    assert "Warning" not in result.output and "Traceback" not in result.output
    metric = json.loads(out.read_text())["models"]["model"]["metrics"]["dtw"]
    assert metric["validity"]["specificity"]["passed"] is None


def test_bootstrap_below_200_is_refused_and_below_2000_flagged(tmp_path: Path) -> None:
    df, _ = simulate_table(np.random.default_rng(3), n_questions=20, n_noise=2)
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, output = _run(str(path), "-B", "1")
    assert code != 0 and "--bootstrap" in output
    out = tmp_path / "s.json"
    code, output = _run(str(path), "-B", "500", "--json", str(out))
    assert code == 0
    result = json.loads(out.read_text())
    assert any("B = 500" in f for f in result["meta"]["flags"])
    for m in result["models"].values():
        assert all(any("B = 500" in f for f in r["flags"]) for r in m["metrics"].values())


def test_overflowing_drift_values_are_refused_with_their_line(tmp_path: Path) -> None:
    df, _ = simulate_table(np.random.default_rng(4), n_questions=10, n_noise=2)
    df.loc[5, "dtw"] = 1e200
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, output = _run(str(path), "-B", "200")
    assert code != 0
    assert "line 7" in output and "1e+200" in output and "Traceback" not in output
