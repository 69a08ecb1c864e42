"""The Bar of issue #21 on the disposition instrument: ``driftlens compare`` of simulated arms.

Arms d025-s1 and d075-s1 differ by a known dose (the simulator's population aligned rates
give the true difference per tendency); d025-s1 and d025-s2 are the same preset with a
different sampling seed (no difference).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from statsmodels.stats.contingency_tables import mcnemar

from study.disposition.sim.model import DISPOSITION_PRESETS, ArmSetting, true_rate
from tests.compare.conftest import BATTERIES, N_STEMS


def _compare(
    ws_cli: Any, tmp_path: Path, *runs: str, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    out = tmp_path / "cmp.json"
    res = ws_cli("compare", *runs, "--instrument", "disposition", "--study", "cmp", "-B", "1000",
                 "--json", str(out), *extra)  # fmt: skip
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())


def test_the_fixture_stems_are_distinct_items() -> None:
    """40 stem ids are 40 items only when their texts differ (they were 10 texts)."""
    from tests.compare.conftest import battery_doc

    for b in battery_doc().batteries:
        stems = {p.stem for p in b.probes()}
        texts = {" ".join(p.text.split()) for p in b.probes()}
        assert len(stems) == N_STEMS
        assert len(texts) == 3 * N_STEMS, (b.name, len(texts))


def test_known_dose_difference_is_covered_and_mcnemar_matches_statsmodels(
    ws_cli: Any, tmp_path: Path
) -> None:
    data = _compare(ws_cli, tmp_path, "d025-s1", "d075-s1")
    preset = DISPOSITION_PRESETS["disp-qwen"]
    rows = {r["scope"]: r for r in data["rows"]}
    assert set(rows) == set(BATTERIES)
    assert data["simulated"] is True
    for battery, r in rows.items():
        truth = true_rate(preset, battery, ArmSetting(75.0, "off")) - true_rate(
            preset, battery, ArmSetting(25.0, "off")
        )
        assert truth < 0
        assert r["ci_low"] <= truth <= r["ci_high"], (battery, truth, r)
        assert r["n_items"] == N_STEMS
        # the exact McNemar p is statsmodels' on the same discordant counts
        up, down = (int(x.split()[0]) for x in r["test_detail"].split(";")[0].split(","))
        table = np.array([[0, up], [down, 0]])
        assert r["p_exact"] == mcnemar(table, exact=True).pvalue
        if up + down >= 25:
            assert r["test"] == "McNemar exact" and r["p_test"] == r["p_exact"]
        else:  # few discordant pairs: the mid-p is the row's test p
            assert r["test"] == "McNemar mid-p" and r["p_test"] < r["p_exact"]
    assert data["matching"][0]["shared"] == 2 * N_STEMS
    assert data["matching"][0]["only_a"] == []


def test_two_seeds_of_one_preset_are_not_different_and_equivalent(
    ws_cli: Any, tmp_path: Path
) -> None:
    data = _compare(ws_cli, tmp_path, "d025-s1", "d025-s2", extra=("--margin", "0.1"))
    for r in data["rows"]:
        assert r["p_adjusted"] > 0.05, r
        assert r["verdict"] == "equivalent", r
        assert r["margin"] == 0.1


def test_three_runs_get_tie_aware_letters(ws_cli: Any, tmp_path: Path) -> None:
    data = _compare(ws_cli, tmp_path, "d025-s1", "d025-s2", "d075-s1")
    assert len(data["rows"]) == 3 * len(BATTERIES)
    letters = {(r["scope"], r["run"]): r["letters"] for r in data["ranking"]}
    for battery in BATTERIES:
        a, b = letters[(battery, "d025-s1")], letters[(battery, "d025-s2")]
        assert set(a) & set(b), letters  # same preset, one seed apart: tied
    assert any(
        not set(letters[(b, "d075-s1")]) & set(letters[(b, "d025-s1")]) for b in BATTERIES
    ), letters


def test_bad_input_is_one_sentence(ws_main: Any) -> None:
    disp = ("--instrument", "disposition", "--study", "cmp")
    for args, words in [
        (("d025-s1", *disp), "at least two runs"),
        (("d025-s1", "nope", *disp), "'nope'"),
        (("d025-s1", "d025-s1", *disp), "named twice"),
        (("a", "b", "--instrument", "astrology"), "Unknown instrument"),
        (("d025-s1", "d075-s1", *disp, "--margin", "-1"), "--margin"),
        (("r1", "r2"), "--labeler"),
    ]:
        code, out = ws_main("compare", *args)
        assert code != 0, args
        assert words in out and "Traceback" not in out, (args, out)
        assert len(out.strip().splitlines()) == 1, out
