"""``driftlens sources stats`` on a probe table: the JSON contract and every kind of bad table."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from driftlens_core.source_reliance import BEHAVIOUR_TYPES, VARIANTS
from study.sources.sim.probe import SOURCE_PRESETS
from tests.cli_invoke import invoke_cli
from tests.sources.simtable import probe_table


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    t1 = probe_table(SOURCE_PRESETS["src-paper"], n_questions=60, seed=2, model="m1")
    # a second tier that shares the bare rows (empty tier on them)
    t2 = probe_table(SOURCE_PRESETS["src-paper"], n_questions=60, seed=2, model="m1", tier="2")
    t1.loc[t1["variant"] == "bare", "tier"] = ""
    t2 = t2[t2["variant"] != "bare"]
    other = probe_table(
        SOURCE_PRESETS["src-rigid"],
        n_questions=60,
        seed=3,
        model="m2",
        dataset="arith",
        n_choices=4,
        probabilities=False,
    )
    return pd.concat([t1, t2, other], ignore_index=True)


def _run(*args: str) -> tuple[int, str]:
    result = invoke_cli(["sources", "stats", *args])
    return result.exit_code, result.output


def test_json_has_the_documented_shape(table: pd.DataFrame, tmp_path: Path) -> None:
    csv = tmp_path / "probes.csv"
    table.to_csv(csv, index=False)
    out = tmp_path / "out" / "s.json"
    code, output = _run(str(csv), "--json", str(out), "--bootstrap", "300", "--seed", "7")
    assert code == 0, output
    res = json.loads(out.read_text())
    assert set(res["models"]) == {"m1", "m2"}
    cell = res["models"]["m1"]["synthetic"]
    for key in ("par_plus", "sdr_plus", "par_minus", "sdr_minus"):
        assert set(cell[key]) == {"user", "doc"}
        assert all(0.0 <= x <= 1.0 for x in cell[key].values())
    for s in ("user", "doc"):
        b = cell["behaviour"][s]
        assert b["type"] in BEHAVIOUR_TYPES
        assert set(b["share"]) == set(BEHAVIOUR_TYPES)
        assert sum(b["share"].values()) == pytest.approx(1.0)
    assert set(cell["odds_ratios"]) == {"parametric", "user", "doc"}
    assert cell["self_pct"] + cell["user_pct"] + cell["doc_pct"] == pytest.approx(100.0)
    assert cell["u_over_d"] > 0
    assert set(cell["kl"]) == set(VARIANTS[1:]) == set(cell["delta_nll"])
    # two tiers x two orderings = the four regressions the paper averages
    assert [(r["tier"], r["ordering"]) for r in cell["regressions"]] == [
        ("1", "doc_first"),
        ("1", "user_first"),
        ("2", "doc_first"),
        ("2", "user_first"),
    ]
    mean_self = sum(r["self_pct"] for r in cell["regressions"]) / 4
    assert cell["self_pct"] == pytest.approx(mean_self)
    assert set(cell["order_effect"]) == {"user_first", "doc_first"}
    # no probability columns: no distribution metrics, and the rest still computed
    arith = res["models"]["m2"]["arith"]
    assert arith["kl"] == {} and arith["distribution"] == {"available": False}
    assert arith["behaviour"]["user"]["type"] == "rigid"
    assert "m1" in output and "PAR+" in output
    # the same seed gives the same numbers
    out2 = tmp_path / "again.json"
    _run(str(csv), "--json", str(out2), "--bootstrap", "300", "--seed", "7")
    assert json.loads(out2.read_text()) == res


#: A change that spoils a good probe table.
Edit = Callable[[pd.DataFrame], pd.DataFrame]


def _bad(table: pd.DataFrame, tmp_path: Path, edit: Edit) -> tuple[int, str]:
    df = table.copy()
    df = edit(df)
    csv = tmp_path / "bad.csv"
    df.to_csv(csv, index=False)
    return _run(str(csv), "--bootstrap", "200")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d.drop(columns="wrong_choice"), "lacks the column(s) wrong_choice"),
        (
            lambda d: d.assign(variant=d["variant"].where(d.index != 5, "u*")),
            "line 7: unknown variant",
        ),
        (lambda d: d.assign(ordering=d["ordering"].where(d.index != 6, "")), "line 8: variant"),
        (
            lambda d: d.assign(
                wrong_choice=d["wrong_choice"].where(d.index != 3, d["correct_choice"])
            ),
            "line 5: wrong_choice equals correct_choice",
        ),
        (lambda d: pd.concat([d, d.iloc[[20]]], ignore_index=True), "a second row"),
        (lambda d: d[d.index != 0], "has no bare row"),
        (
            lambda d: d.assign(p_correct=d["p_correct"].astype(object).where(d.index != 2, "x")),
            "line 4: p_correct 'x' is not a number",
        ),
        (lambda d: d.assign(p_other=d["p_other"].where(d.index != 9, 0.9)), "line 11: p_correct"),
        (lambda d: d.drop(columns="p_other"), "give all three or none"),
        (
            lambda d: d.assign(instruction=["n"] * 3 + ["x"] + ["n"] * (len(d) - 4)),
            "line 5: unknown instruction 'x'",
        ),
    ],
)
def test_bad_tables_get_one_sentence(
    table: pd.DataFrame, tmp_path: Path, edit: Edit, expected: str
) -> None:
    code, output = _bad(table, tmp_path, edit)
    assert code == 2, output
    assert expected in output
    assert "Traceback" not in output


def test_missing_and_empty_files(tmp_path: Path) -> None:
    code, output = _run(str(tmp_path / "nope.csv"))
    assert code == 2 and "File not found" in output
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, output = _run(str(empty))
    assert code == 2 and "is empty" in output
