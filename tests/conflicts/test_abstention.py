"""Abstention / clarification answers: the rubric's not-applicable rule, the action class,
the simulator's known abstain rate, and studies judged before the action class existed."""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlmodel import Session, col, delete, select
from statsmodels.stats.proportion import proportion_confint
from typer.testing import Result

from storage.errors import InputError
from storage.models import JudgeScore, Response
from study.conflicts.actions import ABSTAIN_ACTIONS, ACTION_KIND
from study.conflicts.analysis import TABLE_COLUMNS, analyze_scores, read_scores_csv, stored_table
from study.conflicts.cases import case_views
from study.conflicts.report import build_report
from study.conflicts.score import parse_verdict, rubric
from study.conflicts.sim.judge import JUDGE_PROFILES, expected_judged_total, judge_verdict
from study.conflicts.sim.moves import (
    ABSTAIN_RATE,
    ABSTAIN_RATE_NO_MEMORY,
    OPT_IN_PROFILES,
    RESPONDER_PROFILES,
    compose,
    draw_moves,
)
from study.strict_json import StrictParseError
from tests.app.apptest_support import open_page, unescape


def _reply(action: str | None, d3: object) -> str:
    obj: dict[str, object] = {d: {"score": 2, "quote": ""} for d in ("d1", "d2", "d4", "d5")}
    obj["d3"] = {"score": d3, "quote": ""}
    if action is not None:
        obj["action"] = action
    return f"<answer>{json.dumps(obj)}</answer>"


def test_rubric_states_the_rule_and_the_parser_applies_it() -> None:
    text = rubric("CPC", high_risk=False)
    assert "D3 does not apply" in text and '"action": "commit|conditionalize|clarify' in text
    # an abstention's D3 is not applicable, whatever the judge scored
    for d3 in (None, 4, 0):
        v = parse_verdict(_reply("clarify", d3), high_risk=False, observable=True)
        assert v.action == "clarify" and v.scores["d3"] is None and v.scores["d4"] == 2
    # a recommending answer must have its D3 scored
    with pytest.raises(StrictParseError, match="d3"):
        parse_verdict(_reply("commit", None), high_risk=False, observable=True)
    assert parse_verdict(_reply("commit", 1), high_risk=False, observable=True).scores["d3"] == 1
    for bad in (None, "ask"):
        with pytest.raises(StrictParseError, match='"action" must be one of'):
            parse_verdict(_reply(bad, 2), high_risk=False, observable=True)


def _write(path: Path, rows: list[dict[str, str]], *, action: bool = True) -> Path:
    cols = [*TABLE_COLUMNS, *(["action"] if action else [])]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def _hand_table() -> list[dict[str, str]]:
    """Twelve answers of one model and judge: commits, abstentions, a bank with no conflict."""
    rows = []
    spec = [
        # (instance, type, action, d1..d5)  "" = not applicable
        ("a", "CPC", "commit", "3", "2", "0", "0", "4"),
        ("a", "CPC", "clarify", "4", "1", "", "4", "3"),
        ("b", "CPC", "conditionalize", "4", "3", "4", "2", "4"),
        ("b", "CPC", "defer", "2", "0", "", "0", "3"),
        ("c", "BOC", "verify", "3", "3", "", "4", "4"),
        ("c", "BOC", "commit", "", "", "1", "0", "1"),  # bank kept no conflict
        ("d", "BOC", "clarify", "", "", "", "2", "3"),  # no conflict and an abstention
        ("d", "BOC", "reversible_trial", "3", "2", "3", "1", "4"),
        ("e", "SCC", "verify", "4", "4", "", "3", "4"),
        ("e", "SCC", "commit", "1", "0", "0", "0", "4"),
        ("f", "SCC", "", "2", "2", "2", "2", "2"),  # judged before the action class
        ("f", "SCC", "conditionalize", "4", "2", "3", "1", "3"),
    ]
    for inst, type_, action, *dims in spec:
        rows.append(
            {
                "model": "m",
                "judge": "j",
                "instance_id": inst,
                "type": type_,
                "distractors": "6",
                **{f"d{i + 1}": v for i, v in enumerate(dims)},
                "d6": "",
                "action": action,
            }
        )
    return rows


def test_not_applicable_totals_and_abstention_match_a_hand_built_table(tmp_path: Path) -> None:
    rows = _hand_table()
    stats = analyze_scores(read_scores_csv(_write(tmp_path / "t.csv", rows)), bootstrap=200, seed=1)
    # the oracle: plain pandas on the same rows
    df = pd.DataFrame(rows)
    dims = [f"d{i}" for i in range(1, 6)]
    vals = df[dims].replace("", np.nan).astype(float)
    total = (vals.mean(axis=1) * 5).where(vals["d1"].notna() & vals["d2"].notna())
    df["total"] = total
    assert total.iloc[1] == pytest.approx((4 + 1 + 4 + 3) * 5 / 4)  # an abstention: × 5/4
    assert np.isnan(total.iloc[5]) and np.isnan(total.iloc[6])  # no conflict: no total
    for type_, sub in [*df.groupby("type"), ("all", df)]:
        got = stats.score("m", "j", str(type_), "total")
        assert got is not None and got.mean == pytest.approx(sub["total"].mean())
        assert got.n == int(sub["total"].notna().sum())
        d3 = stats.score("m", "j", str(type_), "d3")
        assert d3 is not None
        assert d3.mean == pytest.approx(vals.loc[sub.index, "d3"].mean())
    # abstention rate: known actions only (11); clarify, defer, verify, clarify, verify = 5
    known = df[df["action"] != ""]
    k = int(known["action"].isin(ABSTAIN_ACTIONS).sum())
    row = next(r for r in stats.abstention if r.type == "all")
    lo, hi = proportion_confint(k, len(known), alpha=0.05, method="wilson")
    assert (row.k, row.n, row.unknown) == (5, 11, 1)
    assert row.rate == pytest.approx(5 / 11)
    assert (row.ci_low, row.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    mix = {a.action: a.k for a in stats.actions}
    assert mix == known["action"].value_counts().reindex(mix).fillna(0).astype(int).to_dict()
    assert any("1 of 12 verdicts carry no action class" in n for n in stats.notes)


def test_judges_agreement_on_the_action_class_matches_sklearn(tmp_path: Path) -> None:
    from sklearn.metrics import cohen_kappa_score

    rows = _hand_table()
    other = [dict(r, judge="k") for r in rows]
    for i, act in ((0, "conditionalize"), (3, "clarify"), (9, "defer")):
        other[i]["action"] = act
        other[i]["d3"] = "" if act in ABSTAIN_ACTIONS else "2"
    table = read_scores_csv(_write(tmp_path / "two.csv", rows + other))
    stats = analyze_scores(table, bootstrap=300, seed=2)
    (row,) = stats.action_agreement
    known = [i for i, r in enumerate(rows) if r["action"]]
    a = [rows[i]["action"] for i in known]
    b = [other[i]["action"] for i in known]
    assert row.n == len(known) == 11
    assert row.exact == pytest.approx(np.mean([x == y for x, y in zip(a, b, strict=True)]))
    assert row.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    sa, sb = [x in ABSTAIN_ACTIONS for x in a], [x in ABSTAIN_ACTIONS for x in b]
    assert row.abstain_kappa == pytest.approx(cohen_kappa_score(sa, sb), abs=1e-12)
    assert row.kappa_ci_low <= row.kappa <= row.kappa_ci_high


def test_bad_action_rows_are_refused_in_one_sentence(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    rows = _hand_table()
    rows[1]["d3"] = "2"  # a clarify answer with a D3 score
    with pytest.raises(InputError, match=r"line 3: d3 must be empty for a clarify answer"):
        read_scores_csv(_write(tmp_path / "a.csv", rows))
    rows = _hand_table()
    rows[0]["action"] = "ask"
    res = cli("conflicts", "stats", str(_write(tmp_path / "b.csv", rows)))
    # the root command prints an InputError as its one sentence (tests/cli covers that path)
    assert res.exit_code != 0 and isinstance(res.exception, InputError)
    assert "line 2: action must be one of" in str(res.exception)


def test_a_table_without_the_action_column_still_reads(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    rows = [r | {"action": ""} for r in _hand_table()]
    for r in rows:
        r["d3"] = r["d3"] or "2"  # a v1 judge scored every D3
    path = _write(tmp_path / "old.csv", rows, action=False)
    res = cli("conflicts", "stats", str(path), "--json", str(tmp_path / "o.json"), "--seed", "0")
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "o.json").read_text())
    assert all(r["n"] == 0 and r["rate"] is None for r in data["abstention"])
    assert data["actions"] == []
    assert "not assessed" in res.output and "12 of 12 verdicts carry no action" in res.output


def test_simulated_abstentions_follow_the_preset_rate_and_the_closed_form() -> None:
    """4,000 simulated answers of the opt-in abstainer, judged by the simulated judge."""
    prof = OPT_IN_PROFILES["mc-abstainer"]
    judge = JUDGE_PROFILES["judge-lenient"]
    assert all(p.rates["CPC"].abstain == 0 for p in RESPONDER_PROFILES.values())
    n, totals, abstained = 4000, [], 0
    rates = prof.at_dose("CPC", 0)
    for i in range(n):
        rng = random.Random(i)
        m = draw_moves(rates, high_risk=False, rng=rng)
        text = compose(m, type_="CPC", side_a=["x a"], side_b=["y b"], distractors=[], rng=rng)
        v = judge_verdict({"response": text, "type": "CPC"}, judge, rng)
        s = [v[d]["score"] for d in ("d1", "d2", "d3", "d4", "d5")]
        abstains = v["action"] in ABSTAIN_ACTIONS
        assert (s[2] is None) == abstains == m.abstain
        abstained += abstains
        applied = [x for x in s if x is not None]
        totals.append(5 * sum(applied) / len(applied))
    lo, hi = proportion_confint(abstained, n, alpha=0.01, method="wilson")
    assert lo <= ABSTAIN_RATE <= hi
    se = float(np.std(totals, ddof=1)) / np.sqrt(n)
    assert abs(np.mean(totals) - expected_judged_total(rates, judge, "CPC")) < 4 * se


def test_stored_study_reports_abstention_against_the_baseline(
    cli: Callable[..., Result], session: Session, tmp_path: Path
) -> None:
    assert cli("conflicts", "import", "--sample").exit_code == 0
    for run, extra in (("ab", ()), ("ab-empty", ("--track", "no-memory"))):
        made = cli(
            "conflicts", "generate", "--model", "sim/mc-abstainer", "--run", run,
            "--samples", "3", *extra,
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        judged = cli("conflicts", "judge", "--run", run, "--judge", "sim/judge-lenient")
        assert judged.exit_code == 0, judged.output
    mem = stored_table(["ab"], session=session)
    empty = stored_table(["ab-empty"], session=session)
    # stored with the verdict: D3 is empty exactly for the abstentions
    assert (mem["d3"].isna() == mem["action"].isin(ABSTAIN_ACTIONS)).all()
    rep = build_report(
        ["ab"], baseline_runs=["ab-empty"], session=session, out_dir=tmp_path / "r", bootstrap=400
    )
    rows = {(r.model.endswith("[no memory]"), r.type): r for r in rep.abstention}
    with_mem, without = rows[(False, "all")], rows[(True, "all")]
    assert with_mem.n == len(mem) and without.n == len(empty)
    assert with_mem.ci_low <= ABSTAIN_RATE <= with_mem.ci_high
    assert without.ci_low <= ABSTAIN_RATE_NO_MEMORY <= without.ci_high
    diff = next(b for b in rep.baseline if b["measure"] == "abstention rate")
    truth = ABSTAIN_RATE - ABSTAIN_RATE_NO_MEMORY
    assert diff["ci_low"] <= truth <= diff["ci_high"] < 0
    per = (  # plain pandas: per instance, the share of its answers that abstained
        mem.groupby("instance_id")["abstain"].mean()
        - empty.groupby("instance_id")["abstain"].mean()
    ).dropna()
    assert diff["difference"] == pytest.approx(per.mean()) and diff["n_instances"] == len(per)
    assert any("memory makes the model abstain less" in line for line in rep.headline)
    printed = cli(
        "conflicts", "report", "--run", "ab", "--baseline", "ab-empty",
        "--out", str(tmp_path / "cli"), "--bootstrap", "200",
    )  # fmt: skip
    assert printed.exit_code == 0, printed.output
    assert "abstention rate" in printed.output
    assert "memory makes the model abstain less" in " ".join(printed.output.split())
    page = (tmp_path / "r" / "conflicts_report.html").read_text()
    assert "<h2>Headline, read against the no-memory baseline</h2>" in page
    assert "Abstention and clarification" in page and "memory makes the model abstain" in page
    csv_back = read_scores_csv(tmp_path / "r" / "conflict_scores.csv")
    assert (csv_back["action"] == mem["action"].to_numpy()).all()

    # the case viewer names each judge's action class and marks abstentions
    views = {v.response_id: v for v in case_views("ab", session=session)}
    by_row = mem.set_index(["response_id", "judge"])["action"]
    seen = [(rid, j) for rid, v in views.items() for j in v.judges if j.status != "error"]
    assert len(seen) == len(by_row) and all(by_row[(r, j.judge)] == j.action for r, j in seen)
    at = open_page("conflicts.py")
    shown = " ".join(unescape(b.value) for b in at.markdown)
    assert "· action " in shown

    # the same study as if judged before the action class existed (conflict-judge-v1)
    ids = session.exec(select(Response.id)).all()
    session.exec(
        delete(JudgeScore)
        .where(col(JudgeScore.kind) == ACTION_KIND)
        .where(col(JudgeScore.response_id).in_(ids))
    )
    session.commit()
    old = build_report(
        ["ab"], baseline_runs=["ab-empty"], session=session, out_dir=tmp_path / "o", bootstrap=200
    )
    assert all(r.n == 0 and r.unknown > 0 for r in old.abstention)
    assert not any(b["measure"] == "abstention rate" for b in old.baseline)
    text = (tmp_path / "o" / "conflicts_report.html").read_text()
    assert "verdicts carry no action class" in text and "not assessed" in text
    assert all(j.action == "unknown" for v in case_views("ab", session=session) for j in v.judges)
