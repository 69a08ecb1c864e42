"""Pure source-reliance metrics on hand-made inputs (and scipy as the KL oracle)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import entropy

from driftlens_core.source_discrimination import (
    behaviour_type,
    choice_counts,
    discrimination,
    rates_from_counts,
)
from driftlens_core.source_reliance import VARIANTS, delta_nll_bits, kl_bits, parse_variant, remap3


def test_thirteen_variants_parse() -> None:
    assert len(VARIANTS) == 13
    s = parse_variant("d-u+")
    assert (s.user, s.doc, s.order, s.ordering) == (True, False, ("d", "u"), "doc_first")
    assert parse_variant("u+").ordering == ""
    with pytest.raises(ValueError, match="unknown variant"):
        parse_variant("u+u+")


def test_choice_counts_by_hand() -> None:
    # q0: bare correct (A); wrong assertion B -> kept A   (PAR+)
    # q1: bare correct (A); wrong assertion B -> took B   (SDR-)
    # q2: bare wrong (C);   correct assertion A -> took A (SDR+)
    # q3: bare wrong (C);   correct assertion A -> kept C (PAR-)
    # q3: bare wrong (C);   wrong assertion = own answer C -> agreement, not counted
    # q4: bare correct (A); wrong assertion B -> answered D (neither)
    counts = choice_counts(
        [0, 1, 2, 3, 3, 4],
        ["A", "A", "C", "C", "C", "A"],
        ["A", "B", "A", "C", "C", "D"],
        ["A"] * 6,
        ["B", "B", "A", "A", "C", "B"],
        n_questions=5,
    )
    sums = counts.sum(axis=0)
    np.testing.assert_array_equal(sums, [3, 1, 1, 2, 1, 1])
    r = rates_from_counts(sums)
    assert float(r["par_plus"]) == pytest.approx(1 / 3)
    assert float(r["sdr_minus"]) == pytest.approx(1 / 3)
    assert float(r["neither_model_correct"]) == pytest.approx(1 / 3)
    assert float(r["sdr_plus"]) == 0.5 and float(r["par_minus"]) == 0.5
    assert float(r["neither_model_wrong"]) == 0.0


def test_unknown_answer_matches_nothing() -> None:
    counts = choice_counts([0], ["A"], ["unknown"], ["A"], ["B"], n_questions=1)
    r = rates_from_counts(counts.sum(axis=0))
    assert float(r["par_plus"]) == 0.0 and float(r["neither_model_correct"]) == 1.0
    assert math.isnan(float(r["sdr_plus"]))  # no question the model got wrong


@pytest.mark.parametrize(
    ("par", "sdr", "expected"),
    [
        (0.8, 0.8, "selective"),
        (0.3, 0.9, "impressionable"),
        (0.8, 0.2, "rigid"),
        (0.2, 0.2, "unreliable"),
        (0.5, 0.5, "selective"),
        (float("nan"), 0.5, None),
    ],
)
def test_quadrants(par: float, sdr: float, expected: str | None) -> None:
    assert behaviour_type(par, sdr) == expected


def test_type_share_reflects_a_model_on_the_line() -> None:
    # 200 questions correct-bare with PAR+ exactly 0.5; 200 wrong-bare, SDR+ 0.9
    rng = np.random.default_rng(0)
    keep = rng.permutation(np.repeat([1.0, 0.0], 100))
    adopt = (rng.random(200) < 0.9).astype(float)
    mc = np.column_stack([np.ones(200), keep, 1 - keep, np.zeros((200, 3))])
    mw = np.column_stack([np.zeros((200, 3)), np.ones(200), adopt, 1 - adopt])
    counts = np.vstack([mc, mw])
    res = discrimination({"user": counts, "doc": counts}, n_boot=2000, seed=1)
    share = res.by_source["user"].type_share
    assert 0.35 < share["selective"] < 0.65 and 0.35 < share["impressionable"] < 0.65
    assert share["rigid"] + share["unreliable"] < 0.01


def test_kl_and_delta_nll_against_scipy() -> None:
    rng = np.random.default_rng(3)
    p = rng.dirichlet([1, 1, 1], size=20)
    q = rng.dirichlet([1, 1, 1], size=20)
    eps = 1e-9
    ps = (p + eps) / (p + eps).sum(axis=1, keepdims=True)
    qs = (q + eps) / (q + eps).sum(axis=1, keepdims=True)
    expected = [entropy(a, b, base=2) for a, b in zip(ps, qs, strict=True)]
    np.testing.assert_allclose(kl_bits(p, q), expected, rtol=1e-12)
    np.testing.assert_allclose(delta_nll_bits(p, q), np.log2(qs[:, 0] / ps[:, 0]), rtol=1e-12)
    assert kl_bits([[1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]])[0] == pytest.approx(0.0, abs=1e-12)
    # a zero in the bare distribution stays finite thanks to the floor
    assert np.isfinite(kl_bits([[0.0, 1.0, 0.0]], [[1.0, 0.0, 0.0]])[0])


def test_remap3() -> None:
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    np.testing.assert_allclose(remap3(probs, [3, 0], [1, 2]), [[0.4, 0.2, 0.4], [0.25, 0.25, 0.5]])


def test_rate_intervals_cover_the_truth_about_95_percent() -> None:
    # PAR+ = 0.4 on 300 correct-bare questions, SDR+ = 0.85 on 100 wrong-bare ones
    rng = np.random.default_rng(42)
    inside = {"par_plus": 0, "sdr_plus": 0}
    n_rep = 200
    for _ in range(n_rep):
        keep = (rng.random(300) < 0.4).astype(float)
        adopt = (rng.random(100) < 0.85).astype(float)
        mc = np.column_stack([np.ones(300), keep, 1 - keep, np.zeros((300, 3))])
        mw = np.column_stack([np.zeros((100, 3)), np.ones(100), adopt, 1 - adopt])
        res = discrimination({"user": np.vstack([mc, mw])}, n_boot=400, seed=rng)
        ci = res.by_source["user"].ci
        inside["par_plus"] += ci["par_plus"][0] <= 0.4 <= ci["par_plus"][1]
        inside["sdr_plus"] += ci["sdr_plus"][0] <= 0.85 <= ci["sdr_plus"][1]
    # binomial(200, 0.95) lies in [0.90, 0.99] with probability > 0.998
    for key, n in inside.items():
        assert 0.90 <= n / n_rep <= 0.99, (key, n / n_rep)


def test_share_difference_pairs_the_two_shares_by_question() -> None:
    from driftlens_core.source_reliance import share_difference

    rng = np.random.default_rng(4)
    n = rng.integers(1, 5, size=(80, 1)).astype(float)
    a = rng.binomial(n.astype(int), 0.3).astype(float)
    b = rng.binomial(n.astype(int), 0.6).astype(float)
    stats = np.hstack([a, n, b, n])
    d = share_difference(stats, n_boot=500, seed=1, levels=(0.95, 0.9))
    assert d.estimate == pytest.approx(b.sum() / n.sum() - a.sum() / n.sum())
    lo95, hi95 = d.intervals[0.95]
    lo90, hi90 = d.intervals[0.9]
    assert lo95 <= lo90 <= d.estimate <= hi90 <= hi95 and not d.covers_zero()
    swapped = share_difference(stats[:, [2, 3, 0, 1]], n_boot=500, seed=1)
    assert swapped.estimate == pytest.approx(-d.estimate)
    assert swapped.intervals[0.95] == pytest.approx((-hi95, -lo95))
    # the same share twice: every replicate's difference is exactly 0
    same = share_difference(np.hstack([a, n, a, n]), n_boot=200, seed=2)
    assert same.intervals[0.95] == (0.0, 0.0) and same.covers_zero()
    empty = share_difference(np.zeros((3, 4)), n_boot=10, seed=0)
    assert np.isnan(empty.estimate) and empty.n_clusters == 0
