"""Hypothesis properties of the drift metrics, under both implementations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftlens_core import dtw_distance, js_distance, levenshtein, pair_drift, sri

pytestmark = pytest.mark.usefixtures("impl")

# Small alphabets make matches (and so interesting alignments) likely; a few long
# sequences reach the bit-parallel limit (64) and the DP fallback beyond it.
symbols = st.integers(min_value=0, max_value=5)
seqs = st.one_of(
    st.lists(symbols, max_size=12),
    st.lists(symbols, min_size=60, max_size=80),
)
SETTINGS = settings(
    max_examples=75,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TOL = 1e-12


@SETTINGS
@given(a=seqs)
def test_identity(a: list[int]) -> None:
    assert dtw_distance(a, a) == 0.0
    assert levenshtein(a, a) == 0
    assert js_distance(a, a) == 0.0
    assert sri(a, a) == 0.0


@SETTINGS
@given(a=seqs, b=seqs)
def test_symmetry_and_bounds(a: list[int], b: list[int]) -> None:
    for fn in (dtw_distance, js_distance, sri):
        d_ab, d_ba = fn(a, b), fn(b, a)
        assert d_ab == pytest.approx(d_ba, abs=TOL)
        assert -TOL <= d_ab <= 1.0 + TOL
    lev = levenshtein(a, b)
    assert lev == levenshtein(b, a)
    assert abs(len(a) - len(b)) <= lev <= max(len(a), len(b))


@SETTINGS
@given(a=seqs, b=seqs, c=seqs)
def test_triangle_inequality(a: list[int], b: list[int], c: list[int]) -> None:
    assert levenshtein(a, c) <= levenshtein(a, b) + levenshtein(b, c)
    # the Jensen–Shannon distance is a metric on histograms (for non-empty sequences)
    if a and b and c:
        assert js_distance(a, c) <= js_distance(a, b) + js_distance(b, c) + TOL


@SETTINGS
@given(data=st.data(), n=st.integers(min_value=1, max_value=70))
def test_dtw_at_most_normalised_hamming(data: st.DataObject, n: int) -> None:
    a = data.draw(st.lists(symbols, min_size=n, max_size=n))
    b = data.draw(st.lists(symbols, min_size=n, max_size=n))
    hamming = sum(x != y for x, y in zip(a, b, strict=True)) / n
    assert dtw_distance(a, b) <= hamming + TOL


@SETTINGS
@given(a=seqs, b=seqs, alpha=st.floats(min_value=0.0, max_value=1.0))
def test_sri_is_the_weighted_mean(a: list[int], b: list[int], alpha: float) -> None:
    value = sri(a, b, alpha=alpha)
    assert -TOL <= value <= 1.0 + TOL
    if a and b:
        expected = alpha * levenshtein(a, b) / max(len(a), len(b)) + (1 - alpha) * js_distance(a, b)
        assert value == pytest.approx(expected, abs=TOL)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    pairs=st.lists(st.tuples(seqs, seqs), max_size=40),
    alpha=st.floats(min_value=0.0, max_value=1.0),
)
def test_pair_drift_matches_single_pair_functions(
    pairs: list[tuple[list[int], list[int]]], alpha: float
) -> None:
    base = [a for a, _ in pairs]
    other = [b for _, b in pairs]
    result = pair_drift(base, other, alpha=alpha)
    assert len(result) == len(pairs)
    for i, (a, b) in enumerate(pairs):
        mx = max(len(a), len(b), 1)
        lev = levenshtein(a, b) / mx if (a or b) else 0.0
        assert result.dtw[i] == pytest.approx(dtw_distance(a, b), abs=TOL)
        assert result.levenshtein[i] == pytest.approx(lev, abs=TOL)
        assert result.jsd[i] == pytest.approx(js_distance(a, b), abs=TOL)
        assert result.sri[i] == pytest.approx(sri(a, b, alpha=alpha), abs=TOL)
    for arr in (result.dtw, result.levenshtein, result.jsd, result.sri):
        assert np.all((arr >= 0.0) & (arr <= 1.0 + TOL))


@SETTINGS
@given(a=seqs, b=seqs)
def test_cost_matrix_and_one_hot_embeddings_reproduce_the_0_1_cost(
    a: list[int], b: list[int]
) -> None:
    # c = 1 - I is the 0/1 cost; one-hot rows are sqrt(2) apart, so DTW scales by sqrt(2)
    plain = dtw_distance(a, b)
    assert dtw_distance(a, b, cost=1.0 - np.eye(6)) == pytest.approx(plain, abs=TOL)
    scaled = dtw_distance(a, b, embeddings=np.eye(6))
    if a and b:
        assert scaled == pytest.approx(np.sqrt(2) * plain, abs=TOL)
