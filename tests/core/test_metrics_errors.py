"""Invalid input raises ValueError naming the problem, under both implementations."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from driftlens_core import (
    PackedSequences,
    dtw_distance,
    js_distance,
    levenshtein,
    pack_sequences,
    pair_drift,
    sri,
)

pytestmark = pytest.mark.usefixtures("impl")

SINGLE = [dtw_distance, levenshtein, js_distance, sri]


@pytest.mark.parametrize("fn", SINGLE, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([1, -2, 3], "non-negative"),
        (np.array([0, -1]), "non-negative"),
        ([1.5, 2.0], "non-integer"),
        ([1.0, math.nan], "integer symbols"),
        ([1, math.inf], "integer symbols"),
        ("abc", "not a string"),
        (["a", "b"], "dtype"),
        ([1, None], "dtype"),
        ([[1, 2], [3]], "flat"),  # ragged
        (np.zeros((2, 2), dtype=int), "flat"),  # 2-D
        (3, "scalar"),
        ([2**40], "at most"),
        ([1 + 2j], "dtype"),
    ],
)
def test_invalid_sequences(fn: Any, bad: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fn(bad, [1, 2])
    with pytest.raises(ValueError, match=message):
        fn([0], bad)


@pytest.mark.parametrize("alpha", [-0.1, 1.5, math.nan, math.inf, "0.5", True, None])
def test_alpha_outside_unit_interval(alpha: Any) -> None:
    with pytest.raises(ValueError, match="alpha"):
        sri([1], [2], alpha=alpha)
    with pytest.raises(ValueError, match="alpha"):
        pair_drift([[1]], [[2]], alpha=alpha)


def test_cost_matrix_problems() -> None:
    with pytest.raises(ValueError, match=r"needs at least 4 rows"):
        dtw_distance([0, 3], [1], cost=np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"needs at least 6 rows"):
        dtw_distance([0, 5], [1], embeddings=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="square"):
        dtw_distance([0], [1], cost=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="not both"):
        dtw_distance([0], [1], cost=np.zeros((2, 2)), embeddings=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="negative"):
        dtw_distance([0], [1], cost=-np.ones((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        dtw_distance([0], [1], cost=np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="2-D"):
        dtw_distance([0], [1], embeddings=np.zeros(3))
    with pytest.raises(ValueError, match="2-D"):
        dtw_distance([0], [1], cost=[[0, "x"], [1, 0]])


def test_packed_sequences_problems() -> None:
    with pytest.raises(ValueError, match="monotone"):
        PackedSequences(np.array([1, 2, 3]), np.array([0, 2, 1, 3]))
    with pytest.raises(ValueError, match="start at 0"):
        PackedSequences(np.array([1, 2, 3]), np.array([1, 3]))
    with pytest.raises(ValueError, match="end at len"):
        PackedSequences(np.array([1, 2, 3]), np.array([0, 2]))
    with pytest.raises(ValueError, match="flat"):
        PackedSequences(np.zeros((2, 3), dtype=int), np.array([0, 3, 6]))
    with pytest.raises(ValueError, match="flat"):
        PackedSequences([[1, 2], [3]], np.array([0, 2, 3]))  # ragged
    with pytest.raises(ValueError, match="non-negative"):
        PackedSequences(np.array([1, -1]), np.array([0, 2]))
    with pytest.raises(ValueError, match="non-integer"):
        PackedSequences(np.array([1.0, 0.5]), np.array([0, 2]))
    with pytest.raises(ValueError, match="offsets must be integers"):
        PackedSequences(np.array([1, 2]), np.array([0.0, 0.5, 2.0]))
    with pytest.raises(ValueError, match="offsets must be a non-empty 1-D"):
        PackedSequences(np.array([1, 2]), np.array([[0, 2]]))


def test_pack_and_pair_drift_problems() -> None:
    with pytest.raises(ValueError, match="same number of sequences"):
        pair_drift([[1]], [[1], [2]])
    with pytest.raises(ValueError, match="same number of sequences"):
        pair_drift(pack_sequences([[1], [2]]), [[1]])
    with pytest.raises(ValueError, match=r"base\[0\] must be a sequence"):
        pair_drift([1, 2], [[1], [2]])  # a flat list where a list of sequences is expected
    with pytest.raises(ValueError, match=r"other\[1\].*non-negative"):
        pair_drift([[1], [2]], [[1], [-2]])
    with pytest.raises(ValueError, match=r"base\[1\].*non-integer"):
        pair_drift([[1], [2.5]], [[1], [2]])
    with pytest.raises(ValueError, match=r"base\[0\].*got str"):
        pair_drift(["ab"], [[1]])
    with pytest.raises(ValueError, match=r"other\[0\].*flat"):
        pair_drift([[1]], [[[1, 2], [3, 4]]])
    with pytest.raises(ValueError, match="2-D"):
        pair_drift(np.zeros(3, dtype=int), [[1], [2], [3]])
    with pytest.raises(ValueError, match=r"sequences\[0\].*flat"):
        pack_sequences([np.zeros((2, 2), dtype=int)])
    with pytest.raises(ValueError, match="not a string"):
        pack_sequences("abc")
    with pytest.raises(ValueError, match="list of symbol sequences"):
        pack_sequences(5)


def test_results_are_immutable() -> None:
    packed = pack_sequences([[1, 2], [3]])
    assert not packed.symbols.flags.writeable
    assert not packed.offsets.flags.writeable
    result = pair_drift(packed, packed)
    with pytest.raises(ValueError):
        result.sri[0] = 1.0
    with pytest.raises(AttributeError):
        result.alpha = 0.1
