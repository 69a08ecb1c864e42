"""The simulated answers use every rubric level, and the judges read the moves back."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from itertools import product

import numpy as np

from study.conflicts.sim.judge import (
    JUDGE_PROFILES,
    expected_judged_total,
    judged_targets,
    noisy_score,
    simulate_judge_pairs,
)
from study.conflicts.sim.moves import (
    RESPONDER_PROFILES,
    Moves,
    compose,
    draw_moves,
    recover_moves,
    true_scores,
)

DIMS = ("d1", "d2", "d3", "d4", "d5")
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
    """The closed form, with the strict judge's distractor penalty and BOC's error share."""
    prof = RESPONDER_PROFILES["mc-hesitant"]
    judge = JUDGE_PROFILES["judge-strict"]
    assert judge.distractor_penalty > 0
    rates = prof.at_dose("BOC", 4)
    rng = random.Random(11)
    totals = []
    for _ in range(20000):
        m = draw_moves(rates, high_risk=False, rng=rng)
        t = judged_targets(
            true_scores(m, high_risk=False), judge, cites_distractor=m.cite_distractor
        )
        totals.append(sum(noisy_score(t[d], judge, d, rng, type_="BOC") for d in DIMS))
    se = float(np.std(totals)) / np.sqrt(len(totals))
    expected = expected_judged_total(rates, judge, "BOC", distractors_shown=True)
    assert abs(float(np.mean(totals)) - expected) < 4 * se
    # the penalty is a visible part of it (about 10 SEs here), so the check can fail
    twin = replace(judge, distractor_penalty=0.0)
    assert expected_judged_total(rates, twin, "BOC", distractors_shown=True) - expected > 8 * se


def test_simulated_judges_agree_about_as_well_as_the_seed_human_pairs() -> None:
    """The two simulated judges on the default cohort (every model × type, 6 distractors)
    against the seed paper's two human annotators: within-one 85.8 %, exact 59.1 %,
    MAE 0.60, quadratic κ 0.71. Tolerance: ±3 points on the shares, ±0.05 on MAE and κ
    (5,000 dimension-level pairs; their Monte Carlo SE is about 0.7 points / 0.01)."""
    from driftlens_core.ordinal import ordinal_agreement

    a, b, truth = simulate_judge_pairs(
        JUDGE_PROFILES["judge-lenient"], JUDGE_PROFILES["judge-strict"], 1000, seed=11
    )
    oa = ordinal_agreement(a, b)
    assert oa.n == 5000 and set(truth) == {0, 1, 2, 3, 4}
    assert abs(oa.within_one - 0.858) <= 0.03, oa
    assert abs(oa.exact - 0.591) <= 0.03, oa
    assert abs(oa.mae - 0.60) <= 0.05, oa
    assert abs(oa.qwk - 0.71) <= 0.05, oa
