"""Compiled kernels against their pure-Python twins and against independent libraries."""

from __future__ import annotations

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein as RFLevenshtein
from scipy.spatial.distance import jensenshannon

from driftlens_core import (
    _impl,
    dtw_distance,
    implementation,
    js_distance,
    levenshtein,
    pack_sequences,
    pair_drift,
    sri,
    use_implementation,
)
from driftlens_core._impl import CompiledCoreMissing

TOL = 1e-12


def _random_pairs(
    rng: np.random.Generator, count: int, alphabet: int, low: int, high: int
) -> tuple[list[list[int]], list[list[int]]]:
    base = [rng.integers(0, alphabet, rng.integers(low, high + 1)).tolist() for _ in range(count)]
    other = [rng.integers(0, alphabet, rng.integers(low, high + 1)).tolist() for _ in range(count)]
    return base, other


def _edge_pairs() -> tuple[list[list[int]], list[list[int]]]:
    """Empty, length-1, equal, permuted, > 64 (DP fallback), > 127 (scalar path) pairs."""
    long_a = [i % 7 for i in range(150)]
    long_b = [(i * 3) % 7 for i in range(130)]
    cases = [
        ([], []),
        ([], [1]),
        ([2], []),
        ([0], [0]),
        ([0], [1]),
        ([1, 2, 3], [1, 2, 3]),
        ([1, 2, 3], [3, 2, 1]),
        (list(range(10)) * 7, list(range(9, -1, -1)) * 7),  # 70 symbols
        (long_a[:65], long_b[:64]),
        (long_a, long_b),
        (long_a, long_a[::-1]),
        ([0] * 100 + [1], [0] * 99 + [1]),  # nearly equal histograms (precise JSD path)
        ([5] * 127, [5] * 126 + [4]),
    ]
    return [a for a, _ in cases], [b for _, b in cases]


def _numpy_dtw(a: list[int], b: list[int]) -> float:
    """Straightforward DTW under the 0/1 cost, normalised by max(n, m)."""
    if not a and not b:
        return 0.0
    if not a or not b:
        return 1.0
    cost = (np.asarray(a)[:, None] != np.asarray(b)[None, :]).astype(np.float64)
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            acc[i, j] = cost[i - 1, j - 1] + min(acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1])
    return float(acc[n, m] / max(n, m))


def _independent(base: list[list[int]], other: list[list[int]]) -> dict[str, np.ndarray]:
    """The four metrics from rapidfuzz, scipy and the numpy DTW above."""
    out: dict[str, list[float]] = {"dtw": [], "levenshtein": [], "jsd": []}
    for a, b in zip(base, other, strict=True):
        out["dtw"].append(_numpy_dtw(a, b))
        if not a and not b:
            out["levenshtein"].append(0.0)
            out["jsd"].append(0.0)
            continue
        if not a or not b:
            out["levenshtein"].append(1.0)
            out["jsd"].append(1.0)
            continue
        out["levenshtein"].append(RFLevenshtein.distance(a, b) / max(len(a), len(b)))
        size = max(max(a), max(b)) + 1
        h_a, h_b = np.bincount(a, minlength=size), np.bincount(b, minlength=size)
        out["jsd"].append(float(jensenshannon(h_a, h_b, base=2)))
    arrays = {k: np.array(v) for k, v in out.items()}
    arrays["sri"] = 0.5 * arrays["levenshtein"] + 0.5 * arrays["jsd"]
    return arrays


@pytest.mark.parametrize(
    ("alphabet", "low", "high"),
    [(12, 0, 15), (3, 0, 40), (40, 1, 20), (300, 1, 30)],
    ids=["bench-like", "few-symbols", "sparse-histograms", "renumbered"],
)
def test_python_and_compiled_agree(alphabet: int, low: int, high: int) -> None:
    rng = np.random.default_rng(alphabet * 1000 + high)
    base, other = _random_pairs(rng, 1500, alphabet, low, high)
    edge_b, edge_o = _edge_pairs()
    base += edge_b
    other += edge_o
    with use_implementation("python"):
        ref = pair_drift(base, other, alpha=0.3)
    with use_implementation("compiled"):
        fast = pair_drift(base, other, alpha=0.3)
    assert ref.implementation == "python"
    assert fast.implementation == "compiled"
    for name in ("dtw", "levenshtein", "jsd", "sri"):
        np.testing.assert_allclose(getattr(fast, name), getattr(ref, name), rtol=0, atol=TOL)


def test_single_pair_functions_agree() -> None:
    rng = np.random.default_rng(7)
    base, other = _random_pairs(rng, 150, 6, 0, 90)
    edge_b, edge_o = _edge_pairs()
    emb = rng.normal(size=(10, 3))
    cost = np.abs(rng.normal(size=(10, 10)))
    for a, b in zip(base + edge_b, other + edge_o, strict=True):
        results = {}
        for name in ("python", "compiled"):
            with use_implementation(name):
                results[name] = (
                    levenshtein(a, b),
                    dtw_distance(a, b),
                    js_distance(a, b),
                    sri(a, b, alpha=0.7),
                    dtw_distance(a, b, cost=cost),
                    dtw_distance(a, b, embeddings=emb),
                )
        assert results["python"][0] == results["compiled"][0]
        np.testing.assert_allclose(results["compiled"][1:], results["python"][1:], atol=TOL)


@pytest.mark.parametrize("seed", [0, 1])
def test_pair_drift_matches_independent_libraries(impl: str, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    count = 2000 if impl == "compiled" else 300
    base, other = _random_pairs(rng, count, 12, 0, 15)
    extra_b, extra_o = _random_pairs(rng, 40, 5, 60, 140)
    edge_b, edge_o = _edge_pairs()
    base += extra_b + edge_b
    other += extra_o + edge_o
    result = pair_drift(pack_sequences(base), pack_sequences(other))
    expected = _independent(base, other)
    for name, values in expected.items():
        np.testing.assert_allclose(getattr(result, name), values, rtol=0, atol=TOL, err_msg=name)


def test_implementation_is_compiled_after_install() -> None:
    with use_implementation("auto"):
        assert implementation() == "compiled"
        assert pair_drift([[1]], [[2]]).implementation == "compiled"


def test_compiled_requested_but_missing_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_impl._cache, "_metrics", None)  # simulate an unbuilt extension
    monkeypatch.setenv("DRIFTLENS_IMPL", "compiled")
    with pytest.raises(CompiledCoreMissing, match="_metrics"):
        levenshtein([1, 2], [2])
    with pytest.raises(CompiledCoreMissing):
        pair_drift([[1]], [[1]])
    with pytest.raises(CompiledCoreMissing):
        implementation()
    # auto falls back to the twins and says so
    monkeypatch.setenv("DRIFTLENS_IMPL", "auto")
    assert implementation() == "python"
    assert pair_drift([[1]], [[2]]).implementation == "python"
    assert levenshtein([1, 2], [2]) == 1


@pytest.mark.parametrize("level", ["generic", "sse2", "avx2"])
def test_every_lane_kernel_variant_agrees(level: str) -> None:
    from driftlens_core import _metrics

    rng = np.random.default_rng(11)
    base, other = _random_pairs(rng, 1200, 12, 0, 20)
    extra_b, extra_o = _random_pairs(rng, 60, 3, 20, 127)
    edge_b, edge_o = _edge_pairs()
    base += extra_b + edge_b
    other += extra_o + edge_o
    with use_implementation("python"):
        ref = pair_drift(base, other)
    try:
        if _metrics._limit_simd(level) != level:
            pytest.skip(f"this CPU does not run the {level} kernels")
        with use_implementation("compiled"):
            fast = pair_drift(base, other)
    finally:
        _metrics._limit_simd("avx2")
    for name in ("dtw", "levenshtein", "jsd", "sri"):
        np.testing.assert_allclose(getattr(fast, name), getattr(ref, name), rtol=0, atol=TOL)


def test_byte_copies_and_narrowing_agree() -> None:
    # PackedSequences hands the kernel byte copies; without them it narrows per chunk
    from driftlens_core import _metrics

    rng = np.random.default_rng(5)
    base, other = _random_pairs(rng, 9000, 12, 0, 20)  # more than one chunk
    pb, po = pack_sequences(base), pack_sequences(other)
    with use_implementation("compiled"):
        via_bytes = pair_drift(pb, po)
    k = max(pb.max_symbol, po.max_symbol) + 1
    narrowed = _metrics.pair_drift(pb.symbols, pb.offsets, po.symbols, po.offsets, k, 0.5)
    for name, values in zip(("dtw", "levenshtein", "jsd", "sri"), narrowed, strict=True):
        np.testing.assert_array_equal(getattr(via_bytes, name), values)


@pytest.mark.parametrize(
    "sequences",
    [
        [[1, 2, 3], [], (4, 5), [True, 0]],
        [[0] * 70, [2**31 - 2]],
        [[1.0, 2.0], [3]],  # integral floats: the careful path
        [np.array([1, 2], dtype=np.uint8), [3, 4]],
        [[np.int64(7), 8]],
        [],
        [[], []],
    ],
)
def test_packing_agrees(sequences: list) -> None:
    packed = {}
    for name in ("python", "compiled"):
        with use_implementation(name):
            packed[name] = pack_sequences(sequences)
    np.testing.assert_array_equal(packed["python"].symbols, packed["compiled"].symbols)
    np.testing.assert_array_equal(packed["python"].offsets, packed["compiled"].offsets)
    assert packed["compiled"].symbols.dtype == np.int32
    assert len(packed["compiled"]) == len(sequences)
