"""The simulated answers use every rubric level, and the judges read the moves back."""

from __future__ import annotations

import random
from collections import Counter
from itertools import product

import numpy as np

from llm.sim.conflicts import (
    JUDGE_PROFILES,
    RESPONDER_PROFILES,
    Moves,
    compose,
    draw_moves,
    expected_judged_total,
    noisy_score,
    recover_moves,
    true_scores,
)

SIDE_A = ("Dana batch-cooks curries on her days off and portions them into containers.",)
SIDE_B = ("During night shifts Dana cannot face heavy food and mostly snacks on fruit.",)


def test_every_move_combination_reads_back_from_its_text() -> None:
    graded = ("full", "gap", "partial", "token", "none")
    clarify = ("targeted", "targeted_gap", "generic", "token", "none")
    for per, exp, cla, (cal, gap), commit in product(
        graded, graded, clarify, ((False, False), (True, False), (True, True)), (False, True)
    ):
        m = Moves(
            perception=per,
            explanation=exp,
            calibrate=cal,
            calibrate_gap=gap,
            commit=commit,
            clarify=cla,
            cite_memory=True,
        )
        text = compose(
            m, type_="CPC", side_a=SIDE_A, side_b=SIDE_B, distractors=(), rng=random.Random(1)
        )
        assert recover_moves(text) == m, text


def test_true_scores_cover_the_whole_scale_on_every_dimension() -> None:
    counts: dict[str, Counter[int]] = {d: Counter() for d in ("d1", "d2", "d3", "d4")}
    rng = random.Random(3)
    for prof in RESPONDER_PROFILES.values():
        for type_ in ("CPC", "BOC", "SCC"):
            for _ in range(300):
                t = true_scores(
                    draw_moves(prof.at_dose(type_, 3), high_risk=False, rng=rng), high_risk=False
                )
                for d in counts:
                    counts[d][t[d]] += 1
    for d, c in counts.items():
        assert set(c) == {0, 1, 2, 3, 4}, (d, c)


def test_expected_judged_total_matches_simulation() -> None:
    prof = RESPONDER_PROFILES["mc-hesitant"]
    judge = JUDGE_PROFILES["judge-strict"]
    rates = prof.at_dose("BOC", 4)
    rng = random.Random(11)
    totals = []
    for _ in range(20000):
        t = true_scores(draw_moves(rates, high_risk=False, rng=rng), high_risk=False)
        totals.append(sum(noisy_score(t[d], judge, d, rng) for d in ("d1", "d2", "d3", "d4", "d5")))
    se = float(np.std(totals)) / np.sqrt(len(totals))
    assert abs(float(np.mean(totals)) - expected_judged_total(rates, judge)) < 4 * se
