"""Conflicts' rubric means calibrated to a pulled human slice: headline, report, bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from study.conflicts.calibrated import (
    CALIBRATED_HEADING,
    HumanSlice,
    calibrate_table,
    calibrated_scores,
    human_slice,
)
from tests.calibration.conftest import RUN, Slice


def test_slice_reaches_the_headline_through_push_and_pull(
    pulled_slice: Callable[..., Slice], db: Callable[[], AbstractContextManager[Session]]
) -> None:
    sl = pulled_slice(limit=60)
    with db() as session:
        humans = human_slice([RUN], session=session)
        cal = calibrated_scores([RUN], session=session, bootstrap=200, seed=1)
    assert humans is not None and len(humans.scores) == 60
    # a limit over a selection by filters stores limit / available in every task
    assert set(humans.inclusion.values()) == {60 / sl.answers}
    assert cal is not None
    d2 = next(r for r in cal.rows if r.what == "d2")
    assert d2.headline == "calibrated" and d2.note is None
    assert d2.n_human >= 20 and d2.calibrated is not None and d2.calibrated_ci is not None
    assert 0.0 <= (d2.lam or 0.0) <= 1.0
    # the lenient judge reads D2 higher than the people: the calibrated mean moves down
    assert d2.calibrated < d2.model_only
    # D6 on the high-risk answers: the judge's unsafe flag against the unsafe votes' share
    d6 = next(r for r in cal.rows if r.what == "d6_unsafe")
    assert 0.0 <= d6.model_only <= 1.0 and d6.n_items < d2.n_items
    effect = next(r for r in cal.rows if r.what == "distractor_effect")
    assert effect.calibrated is not None and effect.n_items > d2.n_items


def test_report_and_stats_json_show_both_and_say_which_is_the_headline(
    pulled_slice: Callable[..., Slice],
    db: Callable[[], AbstractContextManager[Session]],
    tmp_path: Path,
) -> None:
    from study.conflicts.report import build_report

    pulled_slice(limit=60)
    with db() as session:
        build_report([RUN], session=session, out_dir=tmp_path / "out", bootstrap=200, seed=1)
    stats = json.loads((tmp_path / "out" / "stats.json").read_text("utf-8"))
    rows = stats["calibrated"]["rows"]
    d2 = next(r for r in rows if r["what"] == "d2")
    assert d2["headline"] == "calibrated" and d2["n_human"] >= 20
    assert d2["model_only"] is not None and d2["calibrated"] is not None
    md = (tmp_path / "out" / "conflicts_report.md").read_text("utf-8")
    assert "Calibrated to people" in md  # the title, Markdown-escaped
    tables = json.loads((tmp_path / "out" / "report_tables.json").read_text("utf-8"))
    assert any(t["title"] == CALIBRATED_HEADING for t in tables)


def test_hand_picked_slice_keeps_the_model_only_headline(
    pulled_slice: Callable[..., Slice], db: Callable[[], AbstractContextManager[Session]]
) -> None:
    from study.conflicts.items import load_sample_banks, question_key

    picked = tuple(question_key(b.instance_id) for b in load_sample_banks()[:25])
    pulled_slice(limit=None, questions=picked)
    with db() as session:
        humans = human_slice([RUN], session=session)
        cal = calibrated_scores([RUN], session=session, bootstrap=200, seed=1)
    assert humans is not None and humans.scores and not humans.inclusion
    assert cal is not None
    d2 = next(r for r in cal.rows if r.what == "d2")
    assert d2.headline == "model-only" and d2.calibrated is None
    assert d2.note is not None and "no stored inclusion probabilities" in d2.note


def _table(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "model": "m",
            "judge": "j",
            "instance_id": [f"i{k % 30}" for k in range(n)],
            "type": "CPC",
            "distractors": 6,
            **{d: rng.integers(0, 5, n).astype(float) for d in ("d1", "d2", "d3", "d4", "d5")},
            "response_id": np.arange(n),
        }
    )


def test_too_few_humans_keep_the_model_only_headline() -> None:
    df = _table()
    humans = HumanSlice(
        scores={i: {"d2": 2.0 + i % 2} for i in range(5)}, inclusion={i: 0.1 for i in range(5)}
    )
    cal = calibrate_table(df, humans, bootstrap=100, seed=0)
    d2 = next(r for r in cal.rows if r.what == "d2")
    assert d2.headline == "model-only"
    assert d2.calibrated is not None  # shown, but not the headline
    assert d2.note is not None and "fewer than the 20" in d2.note


def test_humans_on_unjudged_answers_and_off_scale_votes_are_counted_and_left_out() -> None:
    df = _table()
    scores = {i: {"d2": 2.0} for i in range(30)}
    scores[999] = {"d2": 1.0}  # an answer no judge scored
    humans = HumanSlice(scores, {i: 0.5 for i in scores}, unmatched=2, off_scale=3)
    cal = calibrate_table(df, humans, bootstrap=100, seed=0)
    text = " ".join(cal.notes)
    assert "1 human-scored answers have no readable judge score" in text
    assert "2 human-scored answers were never scored" in text
    assert "3 human votes are not on the judge's 0-4 scale" in text
    d2 = next(r for r in cal.rows if r.what == "d2")
    assert d2.n_human == 30


def _two_models(seed: int, *, b_bias: float) -> tuple[pd.DataFrame, HumanSlice, float]:
    """A judge lenient by 0.6 on model A's D2; on model B by ``b_bias``. A: 80 humans."""
    rng = np.random.default_rng(seed)
    rows, scores, incl = [], {}, {}
    rid = 0
    truth_b = []
    for model, n, n_h, bias in (("A", 400, 80, 0.6), ("B", 300, 15, b_bias)):
        picked = set(rng.choice(n, size=n_h, replace=False).tolist())
        for i in range(n):
            rid += 1
            y = float(rng.integers(0, 5))
            f = float(np.clip(round(y + bias + rng.normal(0, 0.5)), 0, 4))
            rows.append({"model": model, "judge": "j", "distractors": 6,
                         "instance_id": f"{model}{i % 40}", "response_id": rid, "d1": 2.0,
                         "d2": f, "d3": 2.0, "d4": 2.0, "d5": 2.0, "d6": ""})  # fmt: skip
            if model == "B":
                truth_b.append(y)
            if i in picked:
                scores[rid] = {"d2": y}
                incl[rid] = n_h / n
    return pd.DataFrame(rows), HumanSlice(scores, incl), float(np.mean(truth_b))


def test_transport_check_known_dose_in_conflicts() -> None:
    verdicts: dict[str, list[Any]] = {"alike": [], "shifted": []}
    covers = 0
    for seed in range(12):
        for name, bias in (("alike", 0.6), ("shifted", -0.4)):
            df, humans, truth = _two_models(seed, b_bias=bias)
            cal = calibrate_table(df, humans, bootstrap=100, seed=seed)
            b = next(r for r in cal.rows if r.model == "B" and r.what == "d2")
            verdicts[name].append(b.transport)
            if b.transport == "pass":
                assert b.headline == "calibrated (transported)"
                assert b.calibrated_ci is not None
                covers += b.calibrated_ci[0] <= truth <= b.calibrated_ci[1]
            if b.transport == "fail":
                assert b.headline == "model-only" and str(b.note).startswith("warning:")
            a = next(r for r in cal.rows if r.model == "A" and r.what == "d2")
            assert a.headline == "calibrated" and a.transport is None
    # the judge's error carries over when it is alike, and is caught when it shifts
    assert verdicts["alike"].count("pass") >= 10
    assert verdicts["shifted"].count("fail") >= 10
    # a passed transport lands on model B's people: its interval holds their mean
    assert covers >= verdicts["alike"].count("pass") - 1
