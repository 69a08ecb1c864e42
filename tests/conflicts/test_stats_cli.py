"""``driftlens conflicts stats`` on plain CSV tables."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import Result

from study.conflicts.analysis import TABLE_COLUMNS

SCORE_KEYS = {"model", "judge", "type", "dimension", "mean", "ci_low", "ci_high", "n"}
EFFECT_KEYS = {
    "model",
    "judge",
    "from",
    "to",
    "mean_diff",
    "ci_low",
    "ci_high",
    "mdd",
    "equivalence_bound",
}
DIM_AGREEMENT_KEYS = {
    "judge_a",
    "judge_b",
    "dimension",
    "qwk",
    "exact",
    "within_one",
    "mae",
    "alpha_ordinal",
}
TOTAL_AGREEMENT_KEYS = {"judge_a", "judge_b", "dimension", "pearson", "spearman"}


def _table(path: Path, *, effect: float, seed: int = 0) -> Path:
    """Two models, two judges, 30 instances, doses 0 and 6; D4 is low by construction."""
    rng = np.random.default_rng(seed)
    types = ["CPC", "BOC", "SCC"]
    rows = []
    for model in ("sim/a", "sim/b"):
        for i in range(30):
            base = np.array([3.0, 2.5, 2.0, 0.8, 3.5]) + rng.normal(0, 0.3)
            for dose in (0, 6):
                true = np.clip(base + (effect / 5 if dose == 6 else 0), 0, 4)
                for judge in ("sim/judge-a", "sim/judge-b"):
                    s = np.clip(np.rint(true + rng.normal(0, 0.4, 5)), 0, 4).astype(int)
                    d = [str(v) for v in s]
                    if i % 10 == 0:
                        d[0] = d[1] = ""  # bank kept no conflict: D1/D2 not applicable
                    rows.append(
                        {
                            "model": model,
                            "judge": judge,
                            "instance_id": f"i{i:02d}",
                            "type": types[i % 3],
                            "distractors": dose,
                            **dict(zip(("d1", "d2", "d3", "d4", "d5"), d, strict=True)),
                            "d6": "unsafe" if i % 3 == 2 and i < 12 else "",
                        }
                    )
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(TABLE_COLUMNS))
        w.writeheader()
        w.writerows(rows)
    return path


def test_stats_json_has_the_issue_shape_and_finds_the_effect(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    table = _table(tmp_path / "t.csv", effect=-3.0)
    out = tmp_path / "out.json"
    res = cli(
        "conflicts", "stats", str(table), "--json", str(out), "--bootstrap", "300", "--seed", "1"
    )
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert {"scores", "distractor_effect", "judge_agreement"} <= set(data)
    assert all(set(r) >= SCORE_KEYS for r in data["scores"])
    assert all(set(r) >= EFFECT_KEYS for r in data["distractor_effect"])
    dims = [r for r in data["judge_agreement"] if r["dimension"] != "total"]
    totals = [r for r in data["judge_agreement"] if r["dimension"] == "total"]
    assert len(dims) == 5 and all(set(r) >= DIM_AGREEMENT_KEYS for r in dims)
    assert len(totals) == 1 and set(totals[0]) >= TOTAL_AGREEMENT_KEYS
    pooled = [r for r in data["distractor_effect"] if r["model"] == "all"]
    assert len(pooled) == 2 and all(r["ci_high"] < 0 for r in pooled)
    # D1 not applicable on every tenth instance: its n is smaller than D3's
    by = {(r["model"], r["judge"], r["type"], r["dimension"]): r for r in data["scores"]}
    assert by[("sim/a", "sim/judge-a", "all", "d1")]["n"] == 27
    assert by[("sim/a", "sim/judge-a", "all", "d3")]["n"] == 30
    for m in ("sim/a", "sim/b"):
        means = {
            d: by[(m, "sim/judge-a", "all", d)]["mean"] for d in ("d1", "d2", "d3", "d4", "d5")
        }
        assert min(means, key=means.__getitem__) == "d4"
    assert {r["flag"] for r in data["d6"]} == {"safe", "partial", "unsafe"}
    # the output names its interval (the primary one, calibrated in the bench)
    assert "expanded percentile" in data["meta"]["interval"]
    # agreement by type, against an independent count on the CSV
    import pandas as pd

    df = pd.read_csv(table, dtype=str, keep_default_na=False)
    a = df[df["judge"] == "sim/judge-a"].reset_index(drop=True)
    b = df[df["judge"] == "sim/judge-b"].reset_index(drop=True)
    diffs = []
    for d in ("d1", "d2", "d3", "d4", "d5"):
        for x, y in zip(a[d], b[d], strict=True):
            if x != "" and y != "":
                diffs.append(abs(int(x) - int(y)))
    row = next(r for r in data["agreement_by_type"] if r["type"] == "all")
    assert row["n"] == len(diffs)
    assert row["within_one"] == sum(v <= 1 for v in diffs) / len(diffs)
    assert row["exact"] == sum(v == 0 for v in diffs) / len(diffs)
    assert abs(row["mae"] - sum(diffs) / len(diffs)) < 1e-12
    assert {r["type"] for r in data["agreement_by_type"]} == {"CPC", "BOC", "SCC", "all"}
    # same seed, same numbers
    out2 = tmp_path / "out2.json"
    cli("conflicts", "stats", str(table), "--json", str(out2), "--bootstrap", "300", "--seed", "1")
    assert out2.read_text() == out.read_text()


def test_stats_rejects_a_score_outside_the_scale_with_its_line(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    table = _table(tmp_path / "t.csv", effect=0.0)
    lines = table.read_text().splitlines()
    parts = lines[4].split(",")
    parts[5] = "5"
    lines[4] = ",".join(parts)
    table.write_text("\n".join(lines) + "\n")
    res = cli("conflicts", "stats", str(table))
    assert res.exit_code != 0
    assert "line 5" in str(res.exception) and "d1" in str(res.exception)


def test_stats_rejects_a_missing_column(cli: Callable[..., Result], tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("model,judge\nm,j\n")
    res = cli("conflicts", "stats", str(bad))
    assert res.exit_code != 0 and "instance_id" in str(res.exception)


def test_weighted_kappa_on_scores_using_only_0_1_4_follows_the_0_4_scale(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    from sklearn.metrics import cohen_kappa_score

    a = [0, 1, 4, 1, 0, 4, 1, 0, 4, 1, 4, 0]
    b = [1, 4, 4, 1, 0, 1, 0, 0, 4, 4, 1, 0]
    rows = []
    for judge, scores in (("sim/judge-a", a), ("sim/judge-b", b)):
        for i, v in enumerate(scores):
            rows.append(
                {"model": "sim/m", "judge": judge, "instance_id": f"i{i:02d}", "type": "CPC",
                 "distractors": 6, "d1": v, "d2": v, "d3": v, "d4": v, "d5": v, "d6": ""}
            )  # fmt: skip
    path = tmp_path / "t.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(TABLE_COLUMNS))
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "s.json"
    res = cli("conflicts", "stats", str(path), "--json", str(out), "-B", "200", "--seed", "1")
    assert res.exit_code == 0, res.output
    ref = cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2, 3, 4])
    d3 = [r for r in json.loads(out.read_text())["judge_agreement"] if r["dimension"] == "d3"]
    assert d3 and d3[0]["qwk"] == pytest.approx(ref, abs=1e-12)
