"""Drift metrics on small cases worked out by hand (SPEC §6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from driftlens_core import (
    dtw_distance,
    js_distance,
    levenshtein,
    pack_sequences,
    pair_drift,
    sri,
)

pytestmark = pytest.mark.usefixtures("impl")


def test_levenshtein_kitten_sitting() -> None:
    # kitten -> sitting: k->s, e->i, insert g = 3 edits (symbols: letters as integers)
    a = [ord(c) for c in "kitten"]
    b = [ord(c) for c in "sitting"]
    assert levenshtein(a, b) == 3


def test_levenshtein_small() -> None:
    # (1,2,3) -> (1,3): delete 2 = 1 edit; (1,2,3) -> (3,2,1): substitute 1 and 3 = 2 edits
    assert levenshtein([1, 2, 3], [1, 3]) == 1
    assert levenshtein([1, 2, 3], [3, 2, 1]) == 2
    # disjoint alphabets of lengths 2 and 4: 2 substitutions + 2 insertions
    assert levenshtein([0, 0], [1, 1, 1, 1]) == 4


def test_dtw_known() -> None:
    # S = (1,2,3), T = (1,2,2,3): path (1,1)(2,2)(2,3)(3,4) matches every pair: raw 0
    assert dtw_distance([1, 2, 3], [1, 2, 2, 3]) == 0.0
    # S = (1,2), T = (2,1): every monotone path has a mismatch at its first or last
    # cell; the diagonal costs 1[1≠2] + 1[2≠1] = 2, path (1,1)(1,2)(2,2) costs 1+0+1 = 2,
    # path (1,1)(2,1)(2,2) costs 1+0+1 = 2 -> raw 2, normalised 2 / max(2, 2) = 1
    assert dtw_distance([1, 2], [2, 1]) == 1.0
    # S = (0,0,1), T = (0,1,1): diagonal (0,0)(0,1)(1,1) costs 0+1+0 = 1; path
    # (0,0)(0,0)(1,1)(1,1) along (1,1)(2,1)(3,2)(3,3) costs 0 -> raw 0
    assert dtw_distance([0, 0, 1], [0, 1, 1]) == 0.0
    # S = (0,1,0), T = (0,0,0): the middle 1 must be aligned with some 0: raw 1, / 3
    assert dtw_distance([0, 1, 0], [0, 0, 0]) == pytest.approx(1 / 3, abs=1e-15)


def test_dtw_with_cost_matrix_and_embeddings() -> None:
    # cost matrix: c(0,1) = c(1,0) = 0.5; S = (0,1), T = (1,1) -> diagonal 0.5 + 0 = 0.5,
    # every other path also visits (0,·) once with cost 0.5 -> raw 0.5, / 2 = 0.25
    cost = np.array([[0.0, 0.5], [0.5, 0.0]])
    assert dtw_distance([0, 1], [1, 1], cost=cost) == pytest.approx(0.25, abs=1e-15)
    # embeddings: e0 = (0,0), e1 = (3,4): ‖e0 − e1‖ = 5; S = (0,), T = (1,) -> 5 / 1
    emb = np.array([[0.0, 0.0], [3.0, 4.0]])
    assert dtw_distance([0], [1], embeddings=emb) == pytest.approx(5.0, abs=1e-15)
    # one-hot embeddings give sqrt(2) per mismatch: (0,1) vs (1,0) -> 2·sqrt(2) / 2
    onehot = np.eye(2)
    assert dtw_distance([0, 1], [1, 0], embeddings=onehot) == pytest.approx(math.sqrt(2))


def test_js_known() -> None:
    # S = (0,0), T = (1,1): disjoint supports, h̄ = (½, ½); KL(hS‖h̄) = 1·log 2 = KL(hT‖h̄)
    # -> sqrt(log 2) / sqrt(log 2) = 1
    assert js_distance([0, 0], [1, 1]) == pytest.approx(1.0, abs=1e-15)
    # S = (0,1), T = (0,0): hS = (½,½), hT = (1,0), h̄ = (¾,¼)
    # KL(hS‖h̄) = ½ log(½ / ¾) + ½ log(½ / ¼) = ½ log(2/3) + ½ log 2 = ½ log(4/3)
    # KL(hT‖h̄) = 1 · log(1 / ¾) = log(4/3)
    # JS = ½ · ½ log(4/3) + ½ · log(4/3) = ¾ log(4/3) -> d = sqrt(¾ log(4/3) / log 2)
    expected = math.sqrt(0.75 * math.log(4 / 3) / math.log(2))
    assert js_distance([0, 1], [0, 0]) == pytest.approx(expected, abs=1e-15)
    # order and length do not matter: (0,1) and (1,1,0,0) have equal histograms
    assert js_distance([0, 1], [1, 1, 0, 0]) == 0.0


def test_sri_known() -> None:
    # S = (0,1), T = (0,0): Levenshtein 1 -> d_seq = ½; d_dist as in test_js_known
    d_dist = math.sqrt(0.75 * math.log(4 / 3) / math.log(2))
    assert sri([0, 1], [0, 0]) == pytest.approx(0.5 * 0.5 + 0.5 * d_dist, abs=1e-15)
    assert sri([0, 1], [0, 0], alpha=1.0) == pytest.approx(0.5, abs=1e-15)
    assert sri([0, 1], [0, 0], alpha=0.0) == pytest.approx(d_dist, abs=1e-15)
    # a permutation: d_seq = 2/2 (two substitutions), d_dist = 0 -> SRI = α
    assert sri([0, 1], [1, 0], alpha=0.3) == pytest.approx(0.3, abs=1e-15)


def test_empty_sequence_rules() -> None:
    # both empty -> 0; one empty -> 1 (raw Levenshtein = the other's length)
    for fn in (dtw_distance, js_distance, sri):
        assert fn([], []) == 0.0
        assert fn([], [1, 2]) == 1.0
        assert fn([3], []) == 1.0
    assert levenshtein([], []) == 0
    assert levenshtein([], [1, 2, 3]) == 3
    assert levenshtein([4, 4], []) == 2
    assert dtw_distance([], [1], cost=np.zeros((2, 2))) == 1.0
    result = pair_drift([[], [], [1], [1, 2]], [[], [5], [], [1, 2]])
    for arr in (result.dtw, result.levenshtein, result.jsd, result.sri):
        np.testing.assert_array_equal(arr, [0.0, 1.0, 1.0, 0.0])


def test_pair_drift_known_and_forms() -> None:
    base = [[0, 1], [1, 2, 3], [0, 0]]
    other = [[0, 0], [1, 3], [1, 1]]
    d_dist = math.sqrt(0.75 * math.log(4 / 3) / math.log(2))
    result = pair_drift(base, other)
    # DTW: pair 0 (0,1) vs (0,0): the 1 must meet a 0 -> 1 / 2; pair 1 (1,2,3) vs (1,3):
    # the 2 must meet the 1 or the 3 -> 1 / 3; pair 2 (0,0) vs (1,1): all cells cost 1 and
    # the shortest path has 2 cells -> 2 / 2. Levenshtein: 1 / 2, 1 / 3 (delete 2), 2 / 2.
    np.testing.assert_allclose(result.dtw, [0.5, 1 / 3, 1.0], atol=1e-15)
    np.testing.assert_allclose(result.levenshtein, [0.5, 1 / 3, 1.0], atol=1e-15)
    # pair 1: hS = (⅓,⅓,⅓) on {1,2,3}, hT = (½,0,½): h̄ = (5/12, 1/6, 5/12)
    # KL(hS‖h̄) = 2·⅓ log(4/5) + ⅓ log 2, KL(hT‖h̄) = 2·½ log(6/5)
    js1 = 0.5 * (2 / 3 * math.log(4 / 5) + 1 / 3 * math.log(2)) + 0.5 * math.log(6 / 5)
    np.testing.assert_allclose(result.jsd, [d_dist, math.sqrt(js1 / math.log(2)), 1.0], atol=1e-15)
    np.testing.assert_allclose(result.sri, 0.5 * result.levenshtein + 0.5 * result.jsd)
    assert result.alpha == 0.5
    assert len(result) == 3
    np.testing.assert_array_equal(result.robustness, 1.0 - result.sri)
    # the packed form and a 2-D array give the same answer
    packed = pair_drift(pack_sequences(base), pack_sequences(other))
    np.testing.assert_array_equal(packed.sri, result.sri)
    grid = pair_drift(np.array([[0, 1], [0, 0]]), np.array([[0, 0], [1, 1]]))
    np.testing.assert_array_equal(grid.sri, result.sri[[0, 2]])
    assert not result.sri.flags.writeable


def test_pair_drift_empty_batch() -> None:
    result = pair_drift([], [])
    assert len(result) == 0
    assert result.sri.dtype == np.float64


def test_symbol_ids_may_be_large_and_floats_integral() -> None:
    # renumbering keeps equality: the same as with small ids
    assert levenshtein([10**9, 7, 10**9], [7, 7]) == levenshtein([2, 1, 2], [1, 1])
    assert js_distance([10**9, 300], [300, 300]) == js_distance([1, 0], [0, 0])
    assert levenshtein([1.0, 2.0], np.array([1, 3], dtype=np.uint8)) == 1
    big = pair_drift([[10**6, 5, 999]], [[5, 999, 999]])
    small = pair_drift([[2, 0, 1]], [[0, 1, 1]])
    np.testing.assert_array_equal(big.sri, small.sri)
    np.testing.assert_array_equal(big.dtw, small.dtw)
