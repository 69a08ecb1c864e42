"""Drift metrics between symbol sequences: DTW, Levenshtein, Jensen–Shannon, SRI.

A trajectory is a sequence of non-negative integer symbols (the ontology labels of the
reasoning steps). Drift compares a baseline S = (v1..vn) with a perturbed T = (u1..um)
(SPEC §6):

* **DTW** — DTW_raw is the minimum, over monotone alignment paths, of the summed local
  cost; by default c(v, u) = 1[v ≠ u]. σ_DTW = DTW_raw / max(n, m) ∈ [0, 1].
* **Levenshtein** — the edit distance (insertions, deletions, substitutions of cost 1);
  d_seq = Levenshtein / max(n, m) ∈ [0, 1].
* **Jensen–Shannon distance** — with h_S, h_T the normalised symbol histograms and
  h̄ = (h_S + h_T)/2: d_dist = sqrt(½ KL(h_S‖h̄) + ½ KL(h_T‖h̄)) / sqrt(log 2) ∈ [0, 1].
* **SRI** — σ_SRI = α·d_seq + (1 − α)·d_dist (α = 0.5); robustness index = 1 − σ_SRI.

Empty sequences: two empty sequences are identical (every metric is 0); an empty and a
non-empty sequence are maximally different (every normalised metric is 1, the raw
Levenshtein distance is the length of the other sequence).

Each public function validates its input in vectorised numpy (the symbols through
:mod:`driftlens_core.sequences`) and then runs either the compiled kernel of
:mod:`driftlens_core._metrics` or its pure-Python twin in
:mod:`driftlens_core._metrics_python` (the reference implementation), as chosen by
:mod:`driftlens_core._impl` (``DRIFTLENS_IMPL=python|compiled``). Invalid input raises
:class:`ValueError`.

For many pairs use :func:`pair_drift`, which computes all metrics of all pairs in one
GIL-free pass (tens of millions of short pairs per second on one core; see
docs/performance.md); pack the sequences once with :func:`pack_sequences` when the same
sequences are compared repeatedly::

    from driftlens_core import pack_sequences, pair_drift

    base = pack_sequences([[0, 1, 2], [3, 3]])
    drift = pair_drift(base, [[0, 2, 2], [3]])
    drift.sri  # array([σ_SRI of pair 0, σ_SRI of pair 1])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from driftlens_core._impl import Impl, compiled_module
from driftlens_core._metrics_python import _py_dtw, _py_dtw01, _py_js, _py_levenshtein, _py_pair
from driftlens_core.sequences import (
    BYTE_ALPHABET,
    IntArray,
    PackedSequences,
    pack,
    symbol_array,
)

__all__ = [
    "PairDrift",
    "dtw_distance",
    "js_distance",
    "levenshtein",
    "pair_drift",
    "sri",
]

FloatArray = npt.NDArray[np.float64]


# ------------------------------------------------------------------ validation


def _check_alpha(alpha: Any) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise ValueError(f"alpha must be a real number in [0, 1], got {alpha!r}")
    value = float(alpha)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    return value


def _float_matrix(values: Any, name: str) -> npt.NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be a 2-D array of numbers ({exc})") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must contain only finite numbers")
    return np.ascontiguousarray(arr)


# ------------------------------------------------------------------ results


@dataclass(frozen=True, eq=False)
class PairDrift:
    """Drift of every pair ``(base[i], other[i])``, as returned by :func:`pair_drift`.

    All arrays are float64, read-only, one entry per pair, in [0, 1].

    Attributes:
        dtw: σ_DTW = DTW_raw / max(n, m) under the 0/1 local cost.
        levenshtein: d_seq = Levenshtein / max(n, m).
        jsd: d_dist, the Jensen–Shannon distance of the symbol histograms (base 2).
        sri: σ_SRI = alpha·levenshtein + (1 − alpha)·jsd.
        alpha: the SRI weight used.
        implementation: ``"compiled"`` or ``"python"``, the path that computed it.
    """

    dtw: FloatArray
    levenshtein: FloatArray
    jsd: FloatArray
    sri: FloatArray
    alpha: float
    implementation: Impl

    def __post_init__(self) -> None:
        for name in ("dtw", "levenshtein", "jsd", "sri"):
            getattr(self, name).flags.writeable = False

    def __len__(self) -> int:
        return int(self.dtw.size)

    @property
    def robustness(self) -> FloatArray:
        """Robustness index 1 − σ_SRI of every pair (SPEC §6)."""
        return 1.0 - self.sri


# ------------------------------------------------------------------ dispatch helpers


def _kernels() -> Any:
    """The compiled module, or ``None`` for the pure-Python twins."""
    return compiled_module("_metrics")


def _dense_pair(
    a: IntArray, b: IntArray
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], int]:
    """int32 copies of two symbol arrays renumbered to a small alphabet, and its size K."""
    top = max(int(a.max()) if a.size else -1, int(b.max()) if b.size else -1)
    if top < BYTE_ALPHABET:
        return a.astype(np.int32), b.astype(np.int32), top + 1
    _, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    inverse = inverse.astype(np.int32)
    return inverse[: a.size], inverse[a.size :], int(inverse.max()) + 1


def _empty_rule(n: int, m: int) -> float | None:
    """0 for two empty sequences, 1 for one empty sequence, ``None`` otherwise."""
    if n == 0 and m == 0:
        return 0.0
    if n == 0 or m == 0:
        return 1.0
    return None


# ------------------------------------------------------------------ public API


def dtw_distance(
    a: Sequence[int] | npt.ArrayLike,
    b: Sequence[int] | npt.ArrayLike,
    *,
    cost: npt.ArrayLike | None = None,
    embeddings: npt.ArrayLike | None = None,
) -> float:
    """Normalised dynamic-time-warping distance σ_DTW = DTW_raw / max(n, m).

    DTW_raw = min over monotone alignment paths (steps (1,0), (0,1), (1,1) from the first
    pair of symbols to the last) of Σ c(v_i, u_j), computed by
    D[i][j] = c(v_i, u_j) + min(D[i-1][j-1], D[i-1][j], D[i][j-1]).

    The local cost c is chosen by the keywords (at most one of them):

    * neither: c(v, u) = 1[v ≠ u]; the result is in [0, 1].
    * ``cost``: an M×M matrix, c(v, u) = cost[v, u] (finite, non-negative; symbols index
      it). With a zero diagonal the distance of a sequence to itself is 0.
    * ``embeddings``: an M×d matrix of symbol embeddings, c(v, u) = ‖e_v − e_u‖₂ (the
      geometry-aware variant). The result is in [0, max distance between used rows].

    Args:
        a: baseline sequence S of non-negative integer symbols.
        b: perturbed sequence T.
        cost: optional M×M local-cost matrix.
        embeddings: optional M×d symbol-embedding matrix.

    Returns:
        σ_DTW; 0 when both sequences are empty, 1 when exactly one is.

    Raises:
        ValueError: invalid symbols, both ``cost`` and ``embeddings`` given, a cost matrix
            that is not square or has negative entries, or a matrix with fewer rows
            than the largest symbol + 1.
    """
    x, y = symbol_array(a, "a"), symbol_array(b, "b")
    if cost is not None and embeddings is not None:
        raise ValueError("give either cost (M×M) or embeddings (M×d), not both")
    top = max(int(x.max()) if x.size else -1, int(y.max()) if y.size else -1)
    matrix = None
    if cost is not None:
        matrix = _float_matrix(cost, "cost")
        if matrix.shape[0] != matrix.shape[1]:
            raise ValueError(
                f"cost must be a square M×M matrix, got shape {matrix.shape} "
                "(pass symbol embeddings with embeddings=)"
            )
        if (matrix < 0).any():
            raise ValueError("cost must not contain negative entries")
        if top >= matrix.shape[0]:
            raise ValueError(
                f"cost is {matrix.shape[0]}×{matrix.shape[0]} but the sequences use symbol "
                f"{top}; it needs at least {top + 1} rows"
            )
    elif embeddings is not None:
        matrix = _float_matrix(embeddings, "embeddings")
        if top >= matrix.shape[0]:
            raise ValueError(
                f"embeddings has {matrix.shape[0]} rows but the sequences use symbol {top}; "
                f"it needs at least {top + 1} rows"
            )
    rule = _empty_rule(x.size, y.size)
    if rule is not None:
        return rule
    mod = _kernels()
    if mod is None:
        xs, ys = x.tolist(), y.tolist()
        if cost is not None:
            assert matrix is not None
            cm = matrix.tolist()
            return _py_dtw(xs, ys, lambda v, u: cm[v][u])
        if embeddings is not None:
            assert matrix is not None
            rows = matrix.tolist()
            return _py_dtw(xs, ys, lambda v, u: math.dist(rows[v], rows[u]))
        return _py_dtw01(xs, ys)
    x32, y32 = x.astype(np.int32), y.astype(np.int32)
    if cost is not None:
        return float(mod.dtw_cost(x32, y32, matrix))
    if embeddings is not None:
        return float(mod.dtw_embed(x32, y32, matrix))
    return float(mod.dtw01(x32, y32))


def levenshtein(a: Sequence[int] | npt.ArrayLike, b: Sequence[int] | npt.ArrayLike) -> int:
    """Levenshtein (edit) distance between two integer sequences, not normalised.

    The minimum number of single-symbol insertions, deletions and substitutions turning
    ``a`` into ``b``: L[i][j] = min(L[i-1][j] + 1, L[i][j-1] + 1, L[i-1][j-1] + 1[a_i ≠ b_j])
    with L[i][0] = i, L[0][j] = j. Divide by max(n, m) for d_seq.

    Args:
        a: first sequence of non-negative integer symbols.
        b: second sequence.

    Returns:
        The edit distance; the length of the other sequence when one is empty.

    Raises:
        ValueError: invalid symbols.
    """
    x, y = symbol_array(a, "a"), symbol_array(b, "b")
    if x.size == 0 or y.size == 0:
        return int(x.size + y.size)
    mod = _kernels()
    if mod is None:
        return _py_levenshtein(x.tolist(), y.tolist())
    x32, y32, k = _dense_pair(x, y)
    return int(mod.levenshtein(x32, y32, k))


def js_distance(a: Sequence[int] | npt.ArrayLike, b: Sequence[int] | npt.ArrayLike) -> float:
    """Jensen–Shannon distance between the normalised symbol histograms of two sequences.

    With h_S, h_T the histograms divided by the lengths and h̄ = (h_S + h_T)/2:
    d = sqrt(½ KL(h_S‖h̄) + ½ KL(h_T‖h̄)) / sqrt(log 2), KL(p‖q) = Σ p_k log(p_k / q_k).
    It is a metric on histograms and lies in [0, 1] (equal to scipy's
    ``jensenshannon(h_S, h_T, base=2)``); it ignores the order of the symbols.

    Args:
        a: first sequence of non-negative integer symbols.
        b: second sequence.

    Returns:
        The distance; 0 when both sequences are empty, 1 when exactly one is.

    Raises:
        ValueError: invalid symbols.
    """
    x, y = symbol_array(a, "a"), symbol_array(b, "b")
    rule = _empty_rule(x.size, y.size)
    if rule is not None:
        return rule
    mod = _kernels()
    if mod is None:
        return _py_js(x.tolist(), y.tolist())
    x32, y32, k = _dense_pair(x, y)
    return float(mod.js(x32, y32, k))


def sri(
    a: Sequence[int] | npt.ArrayLike, b: Sequence[int] | npt.ArrayLike, *, alpha: float = 0.5
) -> float:
    """Sequence-robustness drift σ_SRI = α·Levenshtein/max(n, m) + (1 − α)·JS distance.

    Args:
        a: baseline sequence of non-negative integer symbols.
        b: perturbed sequence.
        alpha: weight α ∈ [0, 1] of the order-aware edit term.

    Returns:
        σ_SRI ∈ [0, 1]; 0 when both sequences are empty, 1 when exactly one is. The
        robustness index is ``1 - sri(a, b)``.

    Raises:
        ValueError: invalid symbols or alpha outside [0, 1].
    """
    weight = _check_alpha(alpha)
    x, y = symbol_array(a, "a"), symbol_array(b, "b")
    rule = _empty_rule(x.size, y.size)
    if rule is not None:
        return rule
    d_seq = levenshtein(x, y) / max(x.size, y.size)
    return weight * d_seq + (1.0 - weight) * js_distance(x, y)


def pair_drift(
    base: PackedSequences | Iterable[Sequence[int]] | np.ndarray,
    other: PackedSequences | Iterable[Sequence[int]] | np.ndarray,
    *,
    alpha: float = 0.5,
) -> PairDrift:
    """All drift metrics of the pairs ``(base[i], other[i])`` in one pass.

    The compiled path runs without the GIL and processes pairs of short sequences
    (lengths ≤ 127, up to 255 distinct symbols) 32 at a time in byte-vector lanes;
    other pairs take a scalar path. Results do not depend on the path.

    Args:
        base: baseline sequences: a :class:`PackedSequences` (fastest: validated once),
            a list of integer sequences, or a 2-D integer array (one sequence per row).
        other: perturbed sequences, the same number as ``base``, same forms.
        alpha: SRI weight α ∈ [0, 1].

    Returns:
        :class:`PairDrift` with ``dtw``, ``levenshtein`` (normalised), ``jsd`` and ``sri``
        arrays; empty-sequence rules as in the module docstring.

    Raises:
        ValueError: invalid sequences, different numbers of sequences, or alpha outside
            [0, 1].
    """
    weight = _check_alpha(alpha)
    pb = pack(base, "base")
    po = pack(other, "other")
    if len(pb) != len(po):
        raise ValueError(
            f"base and other must hold the same number of sequences, got {len(pb)} and {len(po)}"
        )
    mod = _kernels()
    if mod is None:
        rows = [
            _py_pair(pb.sequence(i).tolist(), po.sequence(i).tolist(), weight)
            for i in range(len(pb))
        ]
        cols = np.array(rows, dtype=np.float64).reshape(len(pb), 4)
        return PairDrift(
            dtw=cols[:, 0].copy(),
            levenshtein=cols[:, 1].copy(),
            jsd=cols[:, 2].copy(),
            sri=cols[:, 3].copy(),
            alpha=weight,
            implementation="python",
        )
    top = max(pb.max_symbol, po.max_symbol)
    bsym, osym = pb.symbols, po.symbols
    bbytes, obytes = pb.byte_symbols, po.byte_symbols
    if top >= BYTE_ALPHABET:
        bbytes = obytes = None
        _, inverse = np.unique(np.concatenate([bsym, osym]), return_inverse=True)
        inverse = inverse.astype(np.int32)
        bsym, osym = inverse[: bsym.size], inverse[bsym.size :]
        top = int(inverse.max()) if inverse.size else -1
    dtw, lev, jsd, sri_ = mod.pair_drift(
        bsym, pb.offsets, osym, po.offsets, top + 1, weight, bbytes, obytes
    )
    return PairDrift(
        dtw=dtw, levenshtein=lev, jsd=jsd, sri=sri_, alpha=weight, implementation="compiled"
    )
