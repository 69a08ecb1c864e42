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

Each public function validates its input here, in vectorised numpy, and then runs either
the compiled kernel of :mod:`driftlens_core._metrics` or the pure-Python twin defined in
this module (the reference implementation), as chosen by :mod:`driftlens_core._impl`
(``DRIFTLENS_IMPL=python|compiled``). Invalid input raises :class:`ValueError`.

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

import array
import itertools
import math
import numbers
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from driftlens_core._impl import Impl, compiled_module

__all__ = [
    "PackedSequences",
    "PairDrift",
    "dtw_distance",
    "js_distance",
    "levenshtein",
    "pack_sequences",
    "pair_drift",
    "sri",
]

# Symbols must fit the compiled kernels' int32 with room to spare.
_MAX_SYMBOL = 2**31 - 2
# Alphabets larger than this are renumbered densely before the compiled kernels run
# (the metrics only compare symbols for equality, so renumbering changes nothing).
_BYTE_ALPHABET = 255

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


# ------------------------------------------------------------------ validation


def _symbols(values: Any, name: str) -> IntArray:
    """Return ``values`` as a 1-D int64 array of non-negative symbols or raise ``ValueError``."""
    if isinstance(values, str | bytes):
        raise ValueError(f"{name} must be a sequence of integer symbols, not a string")
    if isinstance(values, PackedSequences):
        raise ValueError(f"{name} must be one sequence of integer symbols, not PackedSequences")
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nesting, unconvertible objects
        raise ValueError(
            f"{name} must be a flat sequence of integer symbols (could not read it: {exc})"
        ) from None
    if arr.ndim != 1:
        if arr.ndim == 0:
            raise ValueError(f"{name} must be a sequence of integer symbols, not a scalar")
        raise ValueError(f"{name} must be a flat (1-D) sequence of symbols, got shape {arr.shape}")
    return _check_symbol_array(arr, name)


def _check_symbol_array(arr: np.ndarray, name: str) -> IntArray:
    """Validate a 1-D array of symbols (integers ≥ 0, or integral floats) and return int64."""
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    kind = arr.dtype.kind
    if kind == "f":
        finite = np.isfinite(arr)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            raise ValueError(
                f"{name} must contain integer symbols; position {bad} holds {arr[bad]!r}"
            )
        frac = arr != np.floor(arr)
        if frac.any():
            bad = int(np.flatnonzero(frac)[0])
            raise ValueError(
                f"{name} must contain integer symbols; position {bad} holds the "
                f"non-integer value {arr[bad]!r}"
            )
    elif kind not in "iub":
        raise ValueError(
            f"{name} must contain integer symbols, got values of dtype {arr.dtype} "
            "(strings, objects and complex numbers are not symbols)"
        )
    neg = arr < 0
    if neg.any():
        bad = int(np.flatnonzero(neg)[0])
        raise ValueError(
            f"{name} must contain non-negative symbols; position {bad} holds {arr[bad]!r}"
        )
    big = arr > _MAX_SYMBOL
    if big.any():
        bad = int(np.flatnonzero(big)[0])
        raise ValueError(
            f"{name} holds symbol {arr[bad]!r} at position {bad}; symbols must be at most "
            f"{_MAX_SYMBOL}"
        )
    return arr.astype(np.int64, copy=False)


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


# ------------------------------------------------------------------ packed sequences


@dataclass(frozen=True, eq=False)
class PackedSequences:
    """Many symbol sequences in one flat array: the input form of :func:`pair_drift`.

    Sequence ``i`` is ``symbols[offsets[i]:offsets[i + 1]]``. Construct it directly from
    a flat integer array and offsets, or with :func:`pack_sequences` from a list of
    sequences. Construction validates everything once and copies the arrays read-only
    (plus a byte copy of the symbols for the compiled kernels when every symbol is below
    255), so an instance can be passed to :func:`pair_drift` repeatedly at no further
    cost, e.g. one baseline set against each of K perturbed variants.

    Attributes:
        symbols: 1-D int32 array of non-negative symbols (read-only).
        offsets: 1-D int64 array of ``len(self) + 1`` non-decreasing positions, starting
            at 0 and ending at ``len(symbols)`` (read-only).
        max_symbol: the largest symbol, or -1 when there are no symbols.

    Raises:
        ValueError: symbols not a flat array of non-negative integers, or offsets not
            1-D, not integer, not starting at 0, decreasing, or not ending at
            ``len(symbols)``.
    """

    symbols: npt.NDArray[Any]
    offsets: npt.NDArray[Any]
    max_symbol: int = field(init=False)
    # The symbols as bytes plus 16 bytes of padding when they all fit (the compiled lane
    # kernels read these directly), else None.
    _bytes: npt.NDArray[np.uint8] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        sym = _symbols(self.symbols, "PackedSequences.symbols")
        off_in = np.asarray(self.offsets)
        if off_in.ndim != 1 or off_in.size == 0:
            raise ValueError(
                f"PackedSequences.offsets must be a non-empty 1-D array, got shape {off_in.shape}"
            )
        if off_in.dtype.kind not in "iu":
            if off_in.dtype.kind == "f" and np.all(off_in == np.floor(off_in)):
                off_in = off_in.astype(np.int64)
            else:
                raise ValueError(
                    f"PackedSequences.offsets must be integers, got dtype {off_in.dtype}"
                )
        off = off_in.astype(np.int64)
        if off[0] != 0:
            raise ValueError(f"PackedSequences.offsets must start at 0, got {int(off[0])}")
        steps = np.diff(off)
        if (steps < 0).any():
            bad = int(np.flatnonzero(steps < 0)[0])
            raise ValueError(
                "PackedSequences.offsets must be non-decreasing (monotone); offsets"
                f"[{bad + 1}] = {int(off[bad + 1])} < offsets[{bad}] = {int(off[bad])}"
            )
        if off[-1] != sym.size:
            raise ValueError(
                f"PackedSequences.offsets must end at len(symbols) = {sym.size}, got {int(off[-1])}"
            )
        sym32 = sym.astype(np.int32)
        sym32.flags.writeable = False
        off.flags.writeable = False
        object.__setattr__(self, "symbols", sym32)
        object.__setattr__(self, "offsets", off)
        top = int(sym32.max()) if sym32.size else -1
        object.__setattr__(self, "max_symbol", top)
        as_bytes = None
        if top < _BYTE_ALPHABET:
            as_bytes = np.zeros(sym32.size + 16, dtype=np.uint8)
            as_bytes[: sym32.size] = sym32
            as_bytes.flags.writeable = False
        object.__setattr__(self, "_bytes", as_bytes)

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        """Length of every sequence."""
        return np.diff(self.offsets)

    def sequence(self, i: int) -> npt.NDArray[np.int32]:
        """Return sequence ``i`` (a read-only view)."""
        return self.symbols[self.offsets[i] : self.offsets[i + 1]]


def pack_sequences(sequences: Iterable[Sequence[int]] | np.ndarray) -> PackedSequences:
    """Pack a list of integer sequences into one flat array plus offsets.

    Args:
        sequences: an iterable of sequences (lists, tuples, 1-D arrays) of non-negative
            integer symbols, or a 2-D integer array (one sequence per row).

    Returns:
        The validated :class:`PackedSequences`.

    Raises:
        ValueError: an element is not a flat sequence of non-negative integers.
    """
    return _pack(sequences, "sequences")


def _pack(sequences: Any, name: str) -> PackedSequences:
    if isinstance(sequences, PackedSequences):
        return sequences
    if isinstance(sequences, str | bytes):
        raise ValueError(f"{name} must be a list of symbol sequences, not a string")
    if isinstance(sequences, np.ndarray):
        if sequences.ndim != 2:
            raise ValueError(
                f"{name}: a numpy array of sequences must be 2-D (one sequence per row), got "
                f"shape {sequences.shape}; use a list for sequences of different lengths"
            )
        rows, cols = sequences.shape
        flat = _check_symbol_array(sequences.reshape(-1), name)
        return PackedSequences(flat, np.arange(rows + 1, dtype=np.int64) * cols)
    try:
        seqs = list(sequences)
    except TypeError:
        raise ValueError(
            f"{name} must be a list of symbol sequences, got {type(sequences).__name__}"
        ) from None
    # fast paths for lists/tuples of plain ints; None sends anything else to the careful path
    mod = _kernels()
    if mod is not None:
        arrays = mod.pack_lists(seqs, _MAX_SYMBOL)
        if arrays is not None:
            return PackedSequences(*arrays)
    elif seqs and set(map(type, seqs)) <= {list, tuple}:
        packed = _pack_plain_lists(seqs)
        if packed is not None:
            return packed
    # the careful path: accepts arrays and integral floats, names the offending sequence
    sizes = [0]
    for i, seq in enumerate(seqs):
        try:
            if isinstance(seq, str | bytes | dict | set):
                raise TypeError
            sizes.append(len(seq))
        except TypeError:
            raise ValueError(
                f"{name}[{i}] must be a sequence of integer symbols, got {type(seq).__name__}"
            ) from None
    offsets = np.cumsum(np.array(sizes, dtype=np.int64))
    if offsets[-1] == 0:
        return PackedSequences(np.zeros(0, dtype=np.int32), offsets)
    if all(isinstance(s, np.ndarray) for s in seqs):
        for i, seq in enumerate(seqs):
            if seq.ndim != 1:
                raise ValueError(
                    f"{name}[{i}] must be a flat (1-D) sequence, got shape {seq.shape}"
                )
        flat_in: Any = np.concatenate(seqs)
    else:
        flat_in = list(itertools.chain.from_iterable(seqs))
    try:
        flat = np.asarray(flat_in)
    except (ValueError, TypeError):
        flat = np.asarray(flat_in, dtype=object)
    if flat.ndim != 1 or flat.dtype.kind not in "iubf":
        # find the offending sequence for a precise message
        for i, seq in enumerate(seqs):
            _symbols(seq, f"{name}[{i}]")
        raise ValueError(f"{name} must hold flat sequences of integer symbols")
    try:
        flat = _check_symbol_array(flat, name)
    except ValueError:
        for i, seq in enumerate(seqs):
            _symbols(seq, f"{name}[{i}]")
        raise
    return PackedSequences(flat, offsets)


def _pack_plain_lists(seqs: list[Any]) -> PackedSequences | None:
    """Pure-Python twin of ``_metrics.pack_lists``; ``None`` if anything needs a closer look.

    ``array.array("q", ...)`` accepts only integers (no floats, strings or nested lists),
    so whatever it takes is a valid flat int64 array.
    """
    lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    try:
        buffer = array.array("q", itertools.chain.from_iterable(seqs))
    except (TypeError, OverflowError):
        return None
    flat = np.frombuffer(buffer, dtype=np.int64) if len(buffer) else np.zeros(0, np.int64)
    if flat.size and (flat.min() < 0 or flat.max() > _MAX_SYMBOL):
        return None
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return PackedSequences(flat, offsets)


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


# ------------------------------------------------------------------ pure-Python twins


def _py_dtw(a: Sequence[int], b: Sequence[int], cost: Callable[[int, int], float]) -> float:
    """DTW_raw / max(n, m) by the textbook recurrence on non-empty sequences.

    D[i][j] = c(a_i, b_j) + min(D[i-1][j-1], D[i-1][j], D[i][j-1]), D[-1][-1] = 0 and
    D[-1][j] = D[i][-1] = ∞ otherwise; one row is kept.
    """
    inf = math.inf
    n, m = len(a), len(b)
    prev = [inf] * (m + 1)
    prev[0] = 0.0
    for i in range(n):
        cur = [inf] * (m + 1)
        ai = a[i]
        for j in range(m):
            cur[j + 1] = cost(ai, b[j]) + min(prev[j], prev[j + 1], cur[j])
        prev = cur
    return prev[m] / max(n, m)


def _py_dtw01(a: Sequence[int], b: Sequence[int]) -> float:
    """:func:`_py_dtw` under the 0/1 cost, written inline (no function call per cell)."""
    inf = math.inf
    n, m = len(a), len(b)
    prev = [inf] * (m + 1)
    prev[0] = 0.0
    for ai in a:
        cur = [inf] * (m + 1)
        left = inf
        for j, bj in enumerate(b):
            left = (ai != bj) + min(prev[j], prev[j + 1], left)
            cur[j + 1] = left
        prev = cur
    return prev[m] / max(n, m)


def _py_levenshtein(a: Sequence[int], b: Sequence[int]) -> int:
    """Edit distance by the Wagner–Fischer recurrence."""
    prev = list(range(len(b) + 1))
    for i, ai in enumerate(a):
        cur = [i + 1]
        for j, bj in enumerate(b):
            cur.append(min(prev[j + 1] + 1, cur[j] + 1, prev[j] + (ai != bj)))
        prev = cur
    return prev[-1]


def _py_js(a: Sequence[int], b: Sequence[int]) -> float:
    """Jensen–Shannon distance of the histograms of two non-empty sequences, from the definition."""
    hs, ht = Counter(a), Counter(b)
    n, m = len(a), len(b)
    kl_s = kl_t = 0.0
    for sym in hs.keys() | ht.keys():
        p, q = hs[sym] / n, ht[sym] / m
        mid = (p + q) / 2
        if p > 0:
            kl_s += p * math.log(p / mid)
        if q > 0:
            kl_t += q * math.log(q / mid)
    js = 0.5 * kl_s + 0.5 * kl_t
    return math.sqrt(max(js, 0.0) / math.log(2))


def _py_pair(a: Sequence[int], b: Sequence[int], alpha: float) -> tuple[float, float, float, float]:
    if not a or not b:
        v = 0.0 if not a and not b else 1.0
        return v, v, v, v
    mx = max(len(a), len(b))
    d_dtw = _py_dtw01(a, b)
    d_lev = _py_levenshtein(a, b) / mx
    d_js = _py_js(a, b)
    return d_dtw, d_lev, d_js, alpha * d_lev + (1 - alpha) * d_js


# ------------------------------------------------------------------ dispatch helpers


def _kernels() -> Any:
    """The compiled module, or ``None`` for the pure-Python twins."""
    return compiled_module("_metrics")


def _dense_pair(
    a: IntArray, b: IntArray
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], int]:
    """int32 copies of two symbol arrays renumbered to a small alphabet, and its size K."""
    top = max(int(a.max()) if a.size else -1, int(b.max()) if b.size else -1)
    if top < _BYTE_ALPHABET:
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
    x, y = _symbols(a, "a"), _symbols(b, "b")
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
    x, y = _symbols(a, "a"), _symbols(b, "b")
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
    x, y = _symbols(a, "a"), _symbols(b, "b")
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
    x, y = _symbols(a, "a"), _symbols(b, "b")
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
    pb = _pack(base, "base")
    po = _pack(other, "other")
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
    bbytes, obytes = pb._bytes, po._bytes
    if top >= _BYTE_ALPHABET:
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
