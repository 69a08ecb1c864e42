"""``driftlens disposition stats``: the JSON of the issue, agreement with the API, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from study.disposition.analysis import analyze_rates, validate_rate_table
from study.disposition.sim.model import ArmSetting
from tests.cli_invoke import invoke_cli
from tests.disposition.conftest import sim_frame

ARM_KEYS = {
    "aligned_rate", "drift_pp", "ci_low", "ci_high", "ci90_low", "ci90_high", "se", "mdd",
    "equivalence_bound", "within_bound", "p_value", "p_adjusted", "n_stems", "n_responses",
    "n_missing",
}  # fmt: skip
ARMS = [("d000", ArmSetting(0)), ("d075", ArmSetting(75)), ("d100", ArmSetting(100))]


def _run(*args: str) -> tuple[int, str]:
    result = invoke_cli(["disposition", "stats", *args])
    return result.exit_code, result.output


@pytest.fixture
def table(tmp_path: Path) -> Path:
    df = sim_frame(1, ARMS)
    df.loc[3, "aligned"] = ""  # one response without an answer
    path = tmp_path / "rates.csv"
    df.to_csv(path, index=False)
    return path


def test_json_has_the_issue_shape_and_matches_the_api(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "stats.json"
    code, output = _run(
        str(table), "--json", str(out), "--reference", "d000", "--bootstrap", "400",
        "--seed", "3", "--bound", "5",
    )  # fmt: skip
    assert code == 0, output
    assert "null test" in output and "d100" in output
    data = json.loads(out.read_text())
    assert set(data["batteries"]) == {"self_interest", "oversight"}
    b = data["batteries"]["self_interest"]
    assert set(b) == {"arms", "null_test", "noise", "noise_paired"}
    for arm in ("d000", "d075", "d100"):
        assert set(b["arms"][arm]) >= ARM_KEYS
        assert set(b["null_test"][arm]) == {"mean_diff_pp", "ci_low", "ci_high", "excludes_zero"}
    assert set(b["noise"]) == {
        "classifier", "model", "between_stem", "probe_main", "probe_by_arm"
    }  # fmt: skip
    assert set(b["noise_paired"]) == {"classifier", "model", "probe_by_arm"}
    assert b["arms"]["d000"]["n_missing"] == 1 and b["arms"]["d000"]["drift_pp"] == 0.0
    assert b["arms"]["d100"]["ci_high"] < 0  # −12 pp with 30 stems is detected
    assert b["arms"]["d100"]["within_bound"] is False
    # the CLI and the API agree exactly (same seed, same numbers)
    again = analyze_rates(
        validate_rate_table(__import__("pandas").read_csv(table, dtype=str, keep_default_na=False)),
        reference="d000",
        n_boot=400,
        seed=3,
    ).to_dict()
    assert json.loads(json.dumps(again)) == data


def test_reference_defaults_to_first_arm_and_p_adjusted_is_bh(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    code, output = _run(str(table), "--json", str(out), "-B", "300", "--seed", "1")
    assert code == 0, output
    data = json.loads(out.read_text())
    assert data["meta"]["reference"] == "d000"
    ps = [
        (a["p_value"], a["p_adjusted"])
        for b in data["batteries"].values()
        for name, a in b["arms"].items()
        if name != "d000"
    ]
    assert len(ps) == 4 and all(adj >= p for p, adj in ps)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda df: df.assign(aligned=df["aligned"].where(df.index != 4, "maybe")), "line 6"),
        (lambda df: df.assign(sample=df["sample"].where(df.index != 0, "x")), "line 2"),
        (lambda df: df.drop(columns=["probe"]), "probe"),
        (lambda df: df.assign(stem=df["stem"].where(df.index != 7, "")), "line 9: stem"),
        (lambda df: df.iloc[:0], "no rows"),
    ],
)
def test_bad_tables_give_one_line_naming_file_and_line(
    tmp_path: Path, edit: object, message: str
) -> None:
    df = sim_frame(2, ARMS[:2], batteries=("self_interest",), n_stems=5)
    path = tmp_path / "bad.csv"
    edit(df).to_csv(path, index=False)  # type: ignore[operator]
    code, output = _run(str(path), "-B", "200")
    assert code != 0
    assert message in output and "bad.csv" in output
    assert "Traceback" not in output


def test_unknown_reference_and_missing_file(table: Path, tmp_path: Path) -> None:
    code, output = _run(str(table), "--reference", "nope", "-B", "200")
    assert code != 0 and "nope" in output and "Traceback" not in output
    code, output = _run(str(tmp_path / "absent.csv"))
    assert code != 0 and "absent.csv" in output
